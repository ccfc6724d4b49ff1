#!/usr/bin/env python3
"""Four shards of 250 nodes (docs/fleet.md, "Four shards of 250 nodes"; usage:
`python3 docs/figures/fleet_4x250.py [PODSTATUS]`, a release build by default)

Four shards of 250 nodes against one `podstatus serve`: the figures issue 51 asks for.

Measures: time until all 1,000 Nodes Ready; propagation p99 per shard (its --json
summary); a rollout's leader shard killed mid-canary: time until another shard holds the
leader Lease, and until the rollout is decided; the killed shard's nodes taken over
(node Leases held by live shards, Nodes Ready); a shard stopped (SIGTERM, as a
StatefulSet scaled down): time until its nodes are held by the others; peak memory
(VmHWM) and CPU seconds per shard. Prints one JSON document.

POD_WATCH=shared (or per-node, the shards' default) passes `--pod-watch` to the shards.
"""
import hashlib, http.client, json, os, signal, socket, subprocess, sys, time

WS = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))
BIN = sys.argv[1] if len(sys.argv) > 1 else os.path.join(WS, 'target/release/podstatus')
LOGS = os.environ.get('LOGS', '/tmp')
NODES, SHARDS, PODS_PER_NODE, PREFIX = 1000, 4, 10, 'fs'
POD_WATCH = ['--pod-watch', os.environ['POD_WATCH']] if os.environ.get('POD_WATCH') else []

def free_port():
    s = socket.socket(); s.bind(('127.0.0.1', 0)); p = s.getsockname()[1]; s.close(); return p

api_port = free_port()
conn = None
def req(method, path, body=None):
    global conn
    for _ in range(3):
        try:
            if conn is None:
                conn = http.client.HTTPConnection('127.0.0.1', api_port, timeout=30)
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, path, body=data, headers={'Content-Type': 'application/json'} if data else {})
            r = conn.getresponse(); text = r.read()
            return r.status, (json.loads(text) if text else None)
        except (ConnectionError, http.client.HTTPException, OSError):
            conn = None; time.sleep(0.2)
    raise RuntimeError(f'{method} {path}')

def wait(what, cond, timeout=600, every=0.25):
    t0 = time.time()
    while time.time() - t0 < timeout:
        v = cond()
        if v:
            return v
        time.sleep(every)
    raise RuntimeError(f'timed out: {what}')

def cpu(pid):
    """User and system CPU seconds of a live process."""
    try:
        fields = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
        return round((int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK'), 1)
    except OSError:
        return None

def hwm(pid):
    try:
        for line in open(f'/proc/{pid}/status'):
            if line.startswith('VmHWM'):
                return int(line.split()[1]) / 1024
    except OSError:
        return None

server = subprocess.Popen([BIN, 'serve', '--listen', f'127.0.0.1:{api_port}', '--max-connections', '6000'], stdout=subprocess.DEVNULL, stderr=open(f'{LOGS}/fleet-4x250-serve.err', 'w'))
wait('serve', lambda: req('GET', '/version')[0] == 200)
url = f'http://127.0.0.1:{api_port}'
shards = {}
t_start = time.time()
for o in range(SHARDS):
    shards[o] = subprocess.Popen([BIN, 'fleet', '--nodes', str(NODES), '--node-name', PREFIX, '--shard', str(o), '--server', url,
                                  '--control-addr', f'127.0.0.1:{free_port()}', '--json', '--quiet'] + POD_WATCH,
                                 stdout=subprocess.PIPE, stderr=open(f'{LOGS}/fleet-4x250-shard-{o}.err', 'w'), text=True)

def ready_count():
    code, nodes = req('GET', '/api/v1/nodes')
    n = 0
    for node in nodes.get('items', []):
        for c in node.get('status', {}).get('conditions', []):
            if c['type'] == 'Ready' and c['status'] == 'True':
                n += 1
    return n

def holders():
    code, leases = req('GET', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases')
    out = {}
    now = time.time()
    for l in leases.get('items', []):
        name = l['metadata']['name']
        if name.startswith(PREFIX + '-'):
            out[name] = (l.get('spec') or {}).get('holderIdentity') or ''
    return out

wait('all Ready', lambda: ready_count() == NODES, timeout=900)
out = {'nodes': NODES, 'shards': SHARDS, 'pod_watch': os.environ.get('POD_WATCH') or 'per-node',
       'ready_seconds': round(time.time() - t_start, 1)}

# Pods: ten a node.
t0 = time.time()
for n in range(NODES):
    for k in range(PODS_PER_NODE):
        pod = {'metadata': {'name': f'p{n}-{k}', 'namespace': 'default'},
               'spec': {'nodeName': f'{PREFIX}-{n}', 'containers': [{'name': 'app', 'image': 'nginx:1.27'}]}}
        code, a = req('POST', '/api/v1/namespaces/default/pods', pod)
        assert code == 201, a
out['pods'] = NODES * PODS_PER_NODE
out['pods_create_seconds'] = round(time.time() - t0, 1)
def running():
    code, pods = req('GET', '/api/v1/namespaces/default/pods')
    return sum(1 for p in pods['items'] if (p.get('status') or {}).get('phase') == 'Running')
wait('pods Running', lambda: running() == NODES * PODS_PER_NODE, timeout=600, every=1)
out['pods_running_seconds'] = round(time.time() - t0, 1)

# A rollout; its leader killed mid-canary.
plugin = f'{WS}/target/guest/podstatus-v3.wasm'
digest = hashlib.sha256(open(plugin, 'rb').read()).hexdigest()
R = '/apis/podstatus.io/v1alpha1/namespaces/default/pluginrollouts'
code, a = req('POST', R, {'apiVersion': 'podstatus.io/v1alpha1', 'kind': 'PluginRollout', 'metadata': {'name': 'to-v3'},
                          'spec': {'fleet': PREFIX, 'plugin': {'sha256': digest, 'name': 'podstatus-v3', 'file': plugin},
                                   'canary': '10%', 'watch': '30s', 'criteria': {'minSamples': 3}}})
assert code == 201, a
def canary_leader():
    code, r = req('GET', R + '/to-v3')
    st = r.get('status') or {}
    return st.get('phase') == 'Canary' and st.get('leader')
leader = wait('a leader watching', canary_leader)
ordinal = int(leader.split(f'{PREFIX}-shard-')[1].split('_')[0])
# Pods during the canary, so it has samples.
for n in range(NODES):
    pod = {'metadata': {'name': f'c{n}', 'namespace': 'default'},
           'spec': {'nodeName': f'{PREFIX}-{n}', 'containers': [{'name': 'app', 'image': 'nginx:1.27'}]}}
    req('POST', '/api/v1/namespaces/default/pods', pod)
out['memory_mib_per_shard_before_kill'] = {o: hwm(p.pid) for o, p in shards.items()}
out['cpu_seconds_per_shard_before_kill'] = {o: cpu(p.pid) for o, p in shards.items()}
out['serve_cpu_seconds_before_kill'] = cpu(server.pid)
killed = shards.pop(ordinal)
t_kill = time.time()
killed.kill(); killed.wait()
def leader_lease():
    code, l = req('GET', f'/apis/coordination.k8s.io/v1/namespaces/default/leases/{PREFIX}-rollout-leader')
    h = (l.get('spec') or {}).get('holderIdentity') if code == 200 else None
    return h if h and h != leader else None
new_leader = wait('a new leader', leader_lease, every=0.1)
out['leader_takeover_seconds'] = round(time.time() - t_kill, 1)
def decided():
    code, r = req('GET', R + '/to-v3')
    st = r.get('status') or {}
    return st.get('phase') not in (None, 'Canary') and st
st = wait('decided', decided, timeout=300)
out['rollout'] = {'phase': st['phase'], 'decided_by': st['decision']['leader'], 'reason': st['decision']['reason'],
                  'decided_seconds_after_kill': round(time.time() - t_kill, 1)}
live = lambda: [f'{PREFIX}-shard-{o}_' for o in shards]
def taken_over():
    h = holders()
    return len(h) == NODES and all(any(v.startswith(p) for p in live()) for v in h.values()) and ready_count() == NODES
wait('the killed shard\'s nodes taken over', taken_over, timeout=300, every=0.5)
out['killed_shard_nodes_taken_over_seconds'] = round(time.time() - t_kill, 1)

# A shard stopped cleanly (scaled away).
o2 = max(o for o, p in shards.items() if p.poll() is None)
stopped = shards.pop(o2)
t_stop = time.time()
stopped.send_signal(signal.SIGTERM)
summary_stopped = stopped.communicate()[0]
out['stopped_shard_exit'] = stopped.returncode
wait('the stopped shard\'s nodes taken over', taken_over, timeout=300, every=0.5)
out['stopped_shard_nodes_taken_over_seconds'] = round(time.time() - t_stop, 1)
out['memory_mib_per_shard_peak'] = {o: hwm(p.pid) for o, p in shards.items()}
out['serve_memory_mib_peak'] = hwm(server.pid)
out['cpu_seconds_per_shard_at_end'] = {o: cpu(p.pid) for o, p in shards.items()}
out['serve_cpu_seconds_at_end'] = cpu(server.pid)
summaries = {}
for o, p in shards.items():
    p.send_signal(signal.SIGTERM)
for o, p in shards.items():
    text = p.communicate()[0]
    try:
        s = json.loads(text)
        summaries[o] = {'exit': p.returncode, 'passed': s.get('passed'), 'flush': s.get('flush'), 'nodes': s.get('nodes'),
                        'propagation_p99_seconds': [g.get('propagation_p99_seconds') for g in s.get('groups', [])]}
    except ValueError:
        summaries[o] = {'exit': p.returncode, 'text': text[-500:]}
try:
    s = json.loads(summary_stopped)
    summaries[o2] = {'exit': out['stopped_shard_exit'], 'passed': s.get('passed'), 'nodes': s.get('nodes'),
                     'propagation_p99_seconds': [g.get('propagation_p99_seconds') for g in s.get('groups', [])]}
except ValueError:
    summaries[o2] = {'text': summary_stopped[-500:]}
out['summaries'] = summaries
server.send_signal(signal.SIGTERM); server.wait()
print(json.dumps(out, indent=1))
