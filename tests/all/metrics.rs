//! The agent's metrics, scraped over HTTP as Prometheus would, after the real component
//! (metered) has set and synced statuses through a metered API server.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use podstatus_agent::metrics::MeteredApiServer;
use podstatus_agent::metrics::MeteredPlugin;
use podstatus_agent::metrics::{Metrics, MetricsServer};
use podstatus_backends::ApiServer;
use podstatus_runtime::PluginExt;
use podstatus_runtime::bindings::{SyncOutcome, UpdateOutcome};
use podstatus_tests::{TestPod, memory_world, v1_image};

fn pod(name: &str, uid: &str) -> Pod {
    TestPod::new(name, uid).container("c").build()
}

/// One HTTP/1.1 request; returns (status line, headers, body).
fn http_get(addr: SocketAddr, path: &str) -> (String, String, String) {
    let mut stream = TcpStream::connect(addr).expect("connect");
    write!(stream, "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").expect("send");
    let mut response = String::new();
    stream.read_to_string(&mut response).expect("read");
    let (head, body) = response.split_once("\r\n\r\n").expect("a head and a body");
    let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
    (status.to_owned(), headers.to_ascii_lowercase(), body.to_owned())
}

/// The value of the sample line `name` (with its labels, exactly), if present.
fn sample(body: &str, name: &str) -> Option<f64> {
    body.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

#[test]
fn scraped_over_http_after_real_calls() {
    let pods = [pod("web", "u1"), pod("db", "u2")];
    let (_api, world) = memory_world(pods.clone(), false, 100);
    let metrics = Arc::new(Metrics::new());
    metrics.add_queue(Arc::clone(&world.queue));
    let api: Arc<dyn ApiServer> = Arc::new(
        MeteredApiServer::new(Arc::clone(&world.api_server), Arc::clone(&metrics))
            .with_pod_manager(Arc::clone(&world.pod_manager)),
    );
    let queue = Arc::clone(&world.queue);
    let world = podstatus_runtime::World { api_server: api, ..world };
    let component = v1_image().instantiate(world).expect("instantiate");
    let mut plugin = MeteredPlugin::new(Box::new(component), Arc::clone(&metrics));

    for pod in &pods {
        let pod_json = serde_json::to_string(pod).expect("json");
        let outcome = plugin.set_pod_status(&pod_json, r#"{"phase":"Running"}"#).expect("set");
        assert_eq!(outcome, UpdateOutcome::Queued);
    }
    let request = queue.pop().expect("queued");
    assert_eq!(plugin.sync_pod(&request).expect("sync"), SyncOutcome::Written);
    assert_eq!(queue.len(), 1, "one request left for the scrape to see");

    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let server = MetricsServer::start("127.0.0.1:0".parse().expect("addr"), Arc::clone(&metrics), runtime.handle())
        .expect("the metrics endpoint starts");
    let (status, headers, body) = http_get(server.local_addr(), "/metrics");
    assert_eq!(status, "HTTP/1.1 200 OK");
    assert!(headers.contains("content-type: application/openmetrics-text; version=1.0.0"), "{headers}");

    let expected = [
        ("kubelet_pod_status_sync_duration_seconds_count", 1.0),
        ("kubelet_pod_status_sync_duration_seconds_bucket{le=\"+Inf\"}", 1.0),
        ("podstatus_api_calls_total{verb=\"get\",outcome=\"Success\"}", 1.0),
        ("podstatus_api_calls_total{verb=\"update_status\",outcome=\"Success\"}", 1.0),
        ("podstatus_plugin_call_duration_seconds_count{operation=\"set_pod_status\"}", 2.0),
        ("podstatus_plugin_call_duration_seconds_count{operation=\"sync_pod\"}", 1.0),
        ("podstatus_sync_queue_depth", 1.0),
        ("podstatus_status_pending_pods", 1.0),
    ];
    for (name, value) in expected {
        assert_eq!(sample(&body, name), Some(value), "{name} in\n{body}");
    }
    assert!(body.contains("# TYPE kubelet_pod_status_sync_duration_seconds histogram"));
    // OpenMetrics names a counter's family without `_total`; its samples keep it.
    assert!(body.contains("# TYPE podstatus_api_calls counter"));
    assert!(body.ends_with("# EOF\n"), "{body}");
    assert!(body.contains("# TYPE podstatus_sync_queue_depth gauge"));
    assert_eq!(metrics.propagation().snapshot().count, 1);

    let (status, _, _) = http_get(server.local_addr(), "/");
    assert_eq!(status, "HTTP/1.1 404 Not Found");
    let (status, _, body) = http_get(server.local_addr(), "/healthz");
    assert_eq!((status.as_str(), body.as_str()), ("HTTP/1.1 200 OK", "ok"));
    server.shutdown();
}

#[test]
fn a_taken_port_is_an_error() {
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let metrics = Arc::new(Metrics::new());
    let first = MetricsServer::start("127.0.0.1:0".parse().expect("addr"), Arc::clone(&metrics), runtime.handle())
        .expect("first");
    let second = MetricsServer::start(first.local_addr(), metrics, runtime.handle());
    assert!(second.is_err(), "the port is taken");
}

/// client-go's request metrics from a kube-rs client built by `metered_client`, the
/// process metrics and the build info, scraped over HTTP: present, and moving.
#[test]
fn rest_client_process_and_build_metrics_move() {
    use k8s_openapi::api::core::v1::Pod;
    use podstatus_agent::metrics::metered_client;

    let api_server = podstatus_apiserver::EmbeddedApiServer::start(
        Arc::new(podstatus_backends::MemoryApiServer::new()),
        "127.0.0.1:0".parse().expect("addr"),
    )
    .expect("the embedded API server starts");
    let host = api_server.url().trim_start_matches("http://").trim_end_matches('/').to_owned();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().expect("runtime");
    let metrics = Arc::new(Metrics::new());
    let client = {
        let _entered = runtime.enter();
        metered_client(kube::Config::new(api_server.url().parse().expect("url")), &metrics).expect("client")
    };
    let pods: kube::Api<Pod> = kube::Api::namespaced(client, "default");
    runtime.block_on(async {
        let pod: Pod = serde_json::from_value(serde_json::json!({"metadata": {"name": "web"}})).expect("pod");
        pods.create(&Default::default(), &pod).await.expect("create");
        pods.get("web").await.expect("get");
        pods.get("absent").await.expect_err("404");
    });
    assert_eq!(metrics.rest_client_requests("201", "POST", &host), 1);
    assert_eq!(metrics.rest_client_requests("200", "GET", &host), 1);
    assert_eq!(metrics.rest_client_requests("404", "GET", &host), 1);

    let server = MetricsServer::start("127.0.0.1:0".parse().expect("addr"), Arc::clone(&metrics), runtime.handle())
        .expect("the metrics endpoint starts");
    let (_, _, first) = http_get(server.local_addr(), "/metrics");
    for (name, value) in [
        (format!("rest_client_requests_total{{code=\"200\",method=\"GET\",host=\"{host}\"}}"), 1.0),
        (format!("rest_client_requests_total{{code=\"404\",method=\"GET\",host=\"{host}\"}}"), 1.0),
        (format!("rest_client_request_duration_seconds_count{{verb=\"GET\",host=\"{host}\"}}"), 2.0),
        (format!("rest_client_request_duration_seconds_bucket{{le=\"60.0\",verb=\"POST\",host=\"{host}\"}}"), 1.0),
        (
            format!(
                "podstatus_build_info{{version=\"{}\",contract=\"{}\"}}",
                env!("CARGO_PKG_VERSION"),
                podstatus_runtime::Contract::NEWEST.package()
            ),
            1.0,
        ),
    ] {
        assert_eq!(sample(&first, &name), Some(value), "{name} in\n{first}");
    }
    for name in ["process_resident_memory_bytes", "process_virtual_memory_bytes", "process_open_fds", "process_max_fds"]
    {
        assert!(sample(&first, name).is_some_and(|v| v > 0.0), "{name} in\n{first}");
    }
    let started = sample(&first, "process_start_time_seconds").expect("start time");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).expect("clock").as_secs_f64();
    assert!(started <= now && started > now - 24.0 * 3600.0, "started {started}, now {now}");
    // CPU time moves with work; the request counters with requests.
    let cpu_before = sample(&first, "process_cpu_seconds_total").expect("cpu");
    let spin = std::time::Instant::now();
    while spin.elapsed() < std::time::Duration::from_millis(300) {
        std::hint::black_box(spin.elapsed());
    }
    runtime.block_on(pods.get("web")).expect("get");
    let (_, _, second) = http_get(server.local_addr(), "/metrics");
    assert!(sample(&second, "process_cpu_seconds_total").expect("cpu") > cpu_before, "{second}");
    let get_ok = format!("rest_client_requests_total{{code=\"200\",method=\"GET\",host=\"{host}\"}}");
    assert_eq!(sample(&second, &get_ok), Some(2.0), "{second}");
}
