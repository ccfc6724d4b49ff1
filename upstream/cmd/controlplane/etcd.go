package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
)

// endpoints is DIR/endpoints.json: the loopback ports chosen at the first start and
// reused at every later one, so that kubeconfigs (which name the API server's port) and
// etcd's membership (which names its peer URL) stay valid.
type endpoints struct {
	APIServer  int `json:"apiserver_port"`
	EtcdClient int `json:"etcd_client_port"`
	EtcdPeer   int `json:"etcd_peer_port"`
}

// loadOrPickEndpoints reads path or, when it does not exist, picks three free loopback
// ports and writes them there. Either way each port is checked to be free now.
func loadOrPickEndpoints(path string) (*endpoints, error) {
	var ep endpoints
	data, err := os.ReadFile(path)
	switch {
	case err == nil:
		if err := json.Unmarshal(data, &ep); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
	case errors.Is(err, os.ErrNotExist):
		// Hold all three listeners open while picking, so the kernel hands out three
		// different ports; they are free again once closed (a race with other
		// processes is possible, and then the start fails and can be retried).
		var ports [3]int
		for i := range ports {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				return nil, err
			}
			defer l.Close()
			ports[i] = l.Addr().(*net.TCPAddr).Port
		}
		ep = endpoints{APIServer: ports[0], EtcdClient: ports[1], EtcdPeer: ports[2]}
		data, _ := json.Marshal(ep)
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			return nil, err
		}
		return &ep, nil
	default:
		return nil, err
	}
	for _, p := range []struct {
		name string
		port int
	}{{"apiserver_port", ep.APIServer}, {"etcd_client_port", ep.EtcdClient}, {"etcd_peer_port", ep.EtcdPeer}} {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p.port))
		if err != nil {
			return nil, fmt.Errorf("port 127.0.0.1:%d (%s in %s) is taken: %v", p.port, p.name, path, err)
		}
		l.Close()
	}
	return &ep, nil
}

// etcdReadyTimeout bounds how long etcd may take to start serving.
const etcdReadyTimeout = 60 * time.Second

// startEtcd runs a single-member etcd in this process, with its data in dir (a dir
// already holding data is restarted from it), and waits until it serves clients.
func startEtcd(dir string, ep *endpoints) (*embed.Etcd, error) {
	client := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ep.EtcdClient)}
	peer := url.URL{Scheme: "http", Host: fmt.Sprintf("127.0.0.1:%d", ep.EtcdPeer)}
	cfg := embed.NewConfig()
	cfg.Name = "podstatus"
	cfg.Dir = dir
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{client}, []url.URL{client}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{peer}, []url.URL{peer}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.Logger, cfg.LogLevel, cfg.LogOutputs = "zap", "warn", []string{"stderr"}
	// etcd 3.6's NewConfig leaves this 0 (only its own flags default it), which logs a
	// warning for every request; 3.7's sets the same default.
	cfg.WarningUnaryRequestDuration = embed.DefaultWarningUnaryRequestDuration
	// No fsync: a test cluster's writes need not survive a machine crash, only a
	// process restart (the page cache keeps them), and fsync latency on a loaded CI
	// machine would otherwise show up in every API write.
	cfg.UnsafeNoFsync = true
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("etcd: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, fmt.Errorf("etcd: %w", err)
	case <-time.After(etcdReadyTimeout):
		stopEtcd(e)
		return nil, fmt.Errorf("etcd not ready after %s", etcdReadyTimeout)
	}
}

// stopEtcd closes e, giving up after a bound (Close's own steps are bounded, but a
// stuck one must not keep the process from exiting).
func stopEtcd(e *embed.Etcd) {
	done := make(chan struct{})
	go func() { e.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		fmt.Fprintln(os.Stderr, "controlplane: etcd did not close within 15s; exiting anyway")
	}
}
