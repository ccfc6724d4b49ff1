// Command controlplane runs a real Kubernetes control plane for end-to-end tests: etcd
// and kube-apiserver, both in this one process, at the release of k8s.io/kubernetes this
// module links (go.mod, or a releases/*.mod given with -modfile). No controller-manager,
// no scheduler, no cloud provider: tests play the kubelet against a bare API server.
//
//	controlplane --data-dir DIR [--node NAME[,NAME...]]... [--user NAME[:GROUP[,GROUP...]]]...
//	             [--apiserver-arg --flag=value]... [--max-requests-inflight N]
//
// Everything lives in DIR (etcd/, pki/, endpoints.json, kubeconfigs/); a later start on
// the same DIR reuses its CA, keys, ports and etcd data. Once /readyz answers 200 it
// prints one line of JSON on stdout naming the server and the kubeconfigs; everything
// else (etcd's and the API server's logs) goes to stderr. SIGTERM or SIGINT stops the
// API server (through its own signal handler), then etcd, and exits 0.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/kubernetes/cmd/kube-apiserver/app"
)

// readyTimeout bounds how long the API server may take to answer /readyz with 200.
const readyTimeout = 120 * time.Second

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "controlplane: %s\n", strings.ReplaceAll(err.Error(), "\n", "; "))
		os.Exit(1)
	}
}

// options is the command line.
type options struct {
	dataDir          string
	nodes            []string
	users            []user
	apiserverArgs    []string
	maxInflight      int
	maxInflightGiven bool
	exitWithStdin    bool
}

// user is one --user: a client certificate's CN and Os.
type user struct {
	name   string
	groups []string
}

// ready is the line printed on stdout once the API server is ready.
type ready struct {
	Server     string            `json:"server"`
	CA         string            `json:"ca"`
	Admin      string            `json:"admin"`
	Nodes      map[string]string `json:"nodes"`
	Users      map[string]string `json:"users"`
	Etcd       string            `json:"etcd"`
	DataDir    string            `json:"data_dir"`
	Kubernetes string            `json:"kubernetes"`
	ReadyMS    int64             `json:"ready_ms"`
	PID        int               `json:"pid"`
}

// run starts etcd and the API server, reports readiness, and waits for either to stop.
// It returns nil on a clean stop (a signal), else why it failed.
func run() error {
	started := time.Now() // package init, before this, takes some 60 ms more
	// Made first: it installs the API server's SIGTERM/SIGINT handler, whose context is
	// the command's. A signal during our own setup then stops us cleanly too.
	apiserver := app.NewAPIServerCommand()
	stopped := apiserver.Context()

	opts, err := parseFlags(os.Args[1:])
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(opts.dataDir)
	if err != nil {
		return err
	}
	kubeconfigs := filepath.Join(dir, "kubeconfigs")
	if err := os.MkdirAll(kubeconfigs, 0o700); err != nil {
		return err
	}
	pki, err := loadOrCreatePKI(filepath.Join(dir, "pki"))
	if err != nil {
		return err
	}
	ep, err := loadOrPickEndpoints(filepath.Join(dir, "endpoints.json"))
	if err != nil {
		return err
	}
	server := fmt.Sprintf("https://127.0.0.1:%d", ep.APIServer)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", ep.EtcdClient)

	// Client certificates are minted at every start, for the names given this time.
	out := ready{Server: server, CA: pki.caCert, Admin: filepath.Join(kubeconfigs, "admin.kubeconfig"),
		Nodes: map[string]string{}, Users: map[string]string{}, Etcd: etcdURL, DataDir: dir,
		Kubernetes: kubernetesVersion(), PID: os.Getpid()}
	admin, err := pki.writeKubeconfig(out.Admin, server, "kubernetes-admin", []string{"system:masters"})
	if err != nil {
		return err
	}
	for _, n := range opts.nodes {
		out.Nodes[n] = filepath.Join(kubeconfigs, "node-"+n+".kubeconfig")
		if _, err := pki.writeKubeconfig(out.Nodes[n], server, "system:node:"+n, []string{"system:nodes"}); err != nil {
			return err
		}
	}
	for _, u := range opts.users {
		out.Users[u.name] = filepath.Join(kubeconfigs, "user-"+u.name+".kubeconfig")
		if _, err := pki.writeKubeconfig(out.Users[u.name], server, u.name, u.groups); err != nil {
			return err
		}
	}

	if opts.exitWithStdin {
		go stopWhenStdinEnds()
	}
	etcd, err := startEtcd(filepath.Join(dir, "etcd"), ep)
	if err != nil {
		return err
	}
	defer stopEtcd(etcd)
	if stopped.Err() != nil {
		return nil // signalled during setup
	}

	apiserver.SetArgs(apiserverArgs(opts, pki, ep.APIServer, etcdURL))
	apiserver.SilenceErrors = true // we print its error ourselves, on one line
	// A signal while the API server's post-start hooks still run (about the second
	// before /readyz answers 200) fails a hook, and kube-apiserver exits 255 there
	// (klog.Fatal), as the real binary does: stop it once it is ready.
	exited := make(chan error, 1)
	go func() { exited <- apiserver.Execute() }()

	readyErr := make(chan error, 1)
	readyCtx, cancel := context.WithTimeout(context.Background(), readyTimeout)
	defer cancel()
	go func() { readyErr <- waitReady(readyCtx, server+"/readyz", pki.ca.cert, admin) }()
	select {
	case err := <-readyErr:
		if err != nil {
			return err
		}
	case err := <-exited:
		return apiserverExited(err)
	case err := <-etcd.Err():
		return fmt.Errorf("etcd: %w", err)
	}

	out.ReadyMS = time.Since(started).Milliseconds()
	line, err := json.Marshal(out)
	if err != nil {
		return err
	}
	// os.Stdout is unbuffered: the line is out when Write returns.
	if _, err := os.Stdout.Write(append(line, '\n')); err != nil {
		return err
	}

	select {
	case err := <-exited:
		return apiserverExited(err)
	case err := <-etcd.Err():
		return fmt.Errorf("etcd: %w", err)
	}
}

// stopWhenStdinEnds reads standard input until it ends, then signals this process as an
// operator would: a test process that holds a control plane for its whole life (and is
// never told when that ends) cannot leave it running behind it, since its end closes
// the pipe.
func stopWhenStdinEnds() {
	_, _ = io.Copy(io.Discard, os.Stdin)
	fmt.Fprintln(os.Stderr, "controlplane: standard input ended; stopping")
	_ = syscall.Kill(os.Getpid(), syscall.SIGTERM)
}

// apiserverExited is what run returns when the API server's Execute returns err: nil
// after a signal (its handler stopped it cleanly).
func apiserverExited(err error) error {
	if err != nil {
		return fmt.Errorf("kube-apiserver: %w", err)
	}
	return nil
}

// apiserverArgs is kube-apiserver's command line. Every flag here exists in 1.35 and
// 1.37 alike; --apiserver-arg flags come last, so they override these.
func apiserverArgs(opts *options, p *pki, port int, etcdURL string) []string {
	args := []string{
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--etcd-servers=" + etcdURL,
		"--client-ca-file=" + p.caCert,
		"--tls-cert-file=" + p.servingCert,
		"--tls-private-key-file=" + p.servingKey,
		// --api-audiences defaults to the issuer.
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p.saPub,
		"--service-account-signing-key-file=" + p.saKey,
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=Node,RBAC",
		// Added to the default plugins: it is what confines a node to its own Node,
		// Lease and pods' status.
		"--enable-admission-plugins=NodeRestriction",
		// No controller-manager runs, so no ServiceAccount "default" is ever created in
		// a new namespace, and this plugin would refuse every pod there.
		"--disable-admission-plugins=ServiceAccount",
		"--allow-privileged=true",
		// Nothing dials the kubernetes Service's endpoints; "none" spares etcd the
		// master lease written every 10s (and the resourceVersion churn with it).
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		// Stop at once on SIGTERM: no delay for load balancers that do not exist, and
		// the listener closes right away instead of answering 429 while draining.
		"--shutdown-delay-duration=0s",
		"--shutdown-send-retry-after=false",
	}
	if opts.maxInflightGiven {
		// Priority and fairness would queue requests instead; the plain limits answer
		// 429 with Retry-After as soon as N requests are in flight.
		n := strconv.Itoa(opts.maxInflight)
		args = append(args, "--max-requests-inflight="+n, "--max-mutating-requests-inflight="+n,
			"--enable-priority-and-fairness=false")
	}
	return append(args, opts.apiserverArgs...)
}

// parseFlags reads our command line (see the package doc).
func parseFlags(argv []string) (*options, error) {
	opts := &options{}
	fs := flag.NewFlagSet("controlplane", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors are returned, and printed on one line by main
	fs.StringVar(&opts.dataDir, "data-dir", "", "directory holding etcd's data, the PKI, the ports and the kubeconfigs (required)")
	fs.Func("node", "node NAME (repeatable, or comma-separated): writes kubeconfigs/node-NAME.kubeconfig for system:node:NAME in system:nodes", func(v string) error {
		for _, n := range strings.Split(v, ",") {
			if n = strings.TrimSpace(n); n != "" {
				if err := checkName(n); err != nil {
					return err
				}
				opts.nodes = append(opts.nodes, n)
			}
		}
		return nil
	})
	fs.Func("user", "NAME[:GROUP[,GROUP...]] or NAME=GROUP[,GROUP...] (repeatable): writes kubeconfigs/user-NAME.kubeconfig", func(v string) error {
		u, err := parseUser(v)
		if err == nil {
			opts.users = append(opts.users, u)
		}
		return err
	})
	fs.Func("apiserver-arg", "one more kube-apiserver flag, e.g. --apiserver-arg --watch-cache=false (repeatable; appended last)", func(v string) error {
		opts.apiserverArgs = append(opts.apiserverArgs, v)
		return nil
	})
	fs.BoolVar(&opts.exitWithStdin, "exit-with-stdin", false, "stop (as on SIGTERM) when standard input ends: the parent that started us died, or let go of us")
	fs.Func("max-requests-inflight", "N: plain in-flight limits of N instead of priority and fairness", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			return fmt.Errorf("want a positive integer, got %q", v)
		}
		opts.maxInflight, opts.maxInflightGiven = n, true
		return nil
	})
	if err := fs.Parse(argv); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fs.SetOutput(os.Stdout)
			fmt.Println("usage: controlplane --data-dir DIR [--node NAME]... [--user NAME[:GROUP[,GROUP...]]]...\n" +
				"                    [--apiserver-arg --flag=value]... [--max-requests-inflight N]")
			fs.PrintDefaults()
			os.Exit(0)
		}
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if opts.dataDir == "" {
		return nil, errors.New("--data-dir is required")
	}
	return opts, nil
}

// parseUser reads one --user. With '=' the name is what precedes the first '=' (so it may
// contain ':'); otherwise it is what precedes the first ':' (so groups may contain ':',
// as system:masters does). Groups are comma-separated; none is fine.
func parseUser(v string) (user, error) {
	sep := "="
	if !strings.Contains(v, sep) {
		sep = ":"
	}
	name, groups, _ := strings.Cut(v, sep)
	u := user{name: name}
	for _, g := range strings.Split(groups, ",") {
		if g = strings.TrimSpace(g); g != "" {
			u.groups = append(u.groups, g)
		}
	}
	return u, checkName(name)
}

// checkName refuses a node or user name that cannot be part of a file name.
func checkName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsAny(name, "/\x00") {
		return fmt.Errorf("bad name %q", name)
	}
	return nil
}

// waitReady polls url with the admin's client certificate until it answers 200, ctx
// ends (the timeout), or the API server stops (the caller stops waiting then).
func waitReady(ctx context.Context, url string, ca *x509.Certificate, cert tls.Certificate) error {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	client := &http.Client{
		Timeout:   5 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{cert}}},
	}
	last := "no answer yet"
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		resp, err := client.Do(req)
		if err == nil {
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = fmt.Sprintf("%s: %s", resp.Status, body)
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("kube-apiserver not ready after %s (last: %s)", readyTimeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// kubernetesVersion is the version of k8s.io/kubernetes linked into this binary: the
// required one, unless replaced by another version. (A replacement by a directory, as
// host/upstream's build does with a link to the module cache, reads "(devel)" and keeps
// the required version.)
func kubernetesVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, d := range info.Deps {
			if d.Path == "k8s.io/kubernetes" {
				if d.Replace != nil && strings.HasPrefix(d.Replace.Version, "v") {
					return d.Replace.Version
				}
				return d.Version
			}
		}
	}
	return "unknown"
}
