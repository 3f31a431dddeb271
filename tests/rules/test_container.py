"""Tests of wizard/rules/container.py and wizard/parsers/container.py (NVIDIA Container Toolkit, kubectl pods)."""

from __future__ import annotations

from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.parsers.container import detect_container_cli, detect_kubectl_pods, parse_container_cli, parse_kubectl_pods
from wizard.rules import container

from tests.probe_data import PUBLIC, text

TODAY = {"today": "2026-12-02"}


def test_container_cli_info_lists_the_driver_and_gpus_and_warns_on_an_ended_architecture():
    body = text(PUBLIC / "nvidia-container-cli__info-tail.txt")
    r = parse_container_cli(body)
    assert r.driver == "384.130" and r.cuda == "9.0"
    assert [(d.index, d.model, d.architecture) for d in r.devices] == [("0", "GeForce 920M", "3.5")]
    fs = container.judge_container_text(body, TODAY)
    by = {f.id: f for f in fs}
    assert by["driver.version"].verdict is Verdict.PASS and "384.130" in by["driver.version"].message
    assert by["health.gpu_count"].verdict is Verdict.PASS and "nvidia-container-cli info lists 1" in by["health.gpu_count"].message
    assert by["driver.branch"].verdict is Verdict.WARN and "Kepler" in by["driver.branch"].message
    # the /proc/driver/nvidia/version kind gives way: the info block is one output, not two
    assert explain_text(body, expectations=TODAY).kind == "nvidia-container-cli"


def test_container_toolkit_errors_name_the_cause():
    real = explain_text(text(PUBLIC / "nvidia-container-cli__containerd-nvml-version-mismatch.txt"))
    assert real.verdict is Verdict.FAIL
    cases = {
        "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown.": "not loaded on the host",
        "nvidia-container-cli: initialization error: load library failed: libnvidia-ml.so.1: cannot open shared "
        "object file: no such file or directory: unknown.": "libnvidia-ml.so.1",
        "nvidia-container-cli: requirement error: unsatisfied condition: cuda>=12.4, please update your driver to a "
        "newer version, or use an earlier cuda container: unknown.": "cuda>=12.4",
        'docker: Error response from daemon: could not select device driver "" with capabilities: [[gpu]].':
            "no NVIDIA runtime",
    }
    for line, word in cases.items():
        assert detect_container_cli(line) >= 0.9, line
        fs = container.judge_container_text(line, {})
        assert [f.verdict for f in fs] == [Verdict.FAIL] and word in fs[0].message, (line, fs)
        assert fs[0].remedy


def test_kubectl_pods_pass_fail_and_waiting():
    body = text(PUBLIC / "kubectl-get-pods__gpu-operator-pods-and-validation-pass.txt")
    pods = parse_kubectl_pods(body)
    assert len(pods) == 6 and pods[0].status == "Running" and pods[3].status == "Completed"
    fs = container.judge_pods_text(body, {})
    assert [f.verdict for f in fs] == [Verdict.PASS] and "not the GPUs' health" in fs[0].message
    head = "NAME                                   READY   STATUS                  RESTARTS   AGE\n"
    bad = head + "nvidia-driver-daemonset-x7k2p          0/1     CrashLoopBackOff        12         40m\n"
    assert detect_kubectl_pods(bad) == 0.9
    fs = container.judge_pods_text(bad, {})
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "CrashLoopBackOff" in fs[0].message
    waiting = head + "nvidia-operator-validator-abcde         0/1     Init:0/4                0          5m\n"
    assert [f.verdict for f in container.judge_pods_text(waiting, {})] == [Verdict.WARN]


def test_kubectl_listed_several_times_is_judged_as_last_listed():
    r = explain_text(text(PUBLIC / "kubectl-get-pods__k8s-cuda-vectoradd-passed.txt"))
    pods = [f for f in r.findings if f.id == "driver.k8s_pods"]
    # three `kubectl get pods` runs (ContainerCreating, Running, Completed): only the last one counts
    assert [f.verdict for f in pods] == [Verdict.PASS] and r.verdict is Verdict.PASS


def test_operator_pods_waiting_ten_minutes_are_stuck_and_rows_without_a_header_are_read():
    """The real `kubectl get pods` rows of a GPU Operator install stuck in Init (held-out round 14; NVIDIA's
    cloud-native docs), pasted without the header: read by their shape; pods waiting 10 minutes or more fail as stuck
    (the driver pod first), younger ones only wait."""
    from tests.probe_data import PUBLIC, text
    from wizard.explain import explain_text
    from wizard.rules.container import age_s

    r = explain_text(text(PUBLIC / "kubectl__gpu-operator-pods-stuck-init.txt"))
    (f,) = r.findings
    assert r.kind == "kubectl-get-pods" and f.verdict is Verdict.FAIL and "stuck" in f.message
    assert "gpu-feature-discovery-tmblp" in f.message and "nvidia-driver-daemonset" in f.remedy
    assert (age_s("x 0/1 Init:0/1 0 8m32s"), age_s("x 0/1 Init:0/1 0 3h5m"), age_s("x 0/1 Pending 0 ?")) == (512, 11100, None)


# ------------------------------------------------------------------ kubectl describe node

def _node(name: str, edit=lambda t: t, **plan) -> list:
    from wizard.rules.container import judge_k8s_node_text
    from tests.probe_data import PUBLIC, text

    return judge_k8s_node_text(edit(text(PUBLIC / name)), plan)


def test_describe_node_gpu_count_needs_a_plan_or_the_model_label():
    """The real 7-GPU worker (Capacity and Allocatable both 7): every GPU allocatable (the plugin marks none
    unhealthy); whether 7 is all of them neither the plan nor a model label says: unknown. The plan's 8 fails it;
    an H100 SXM label (synthetic, added here) makes 7 a count no HGX node has: warn."""
    f = _node("kubectl-describe-node__7-gpus-allocatable.txt")
    assert [(x.id, x.verdict) for x in f] == [("driver.k8s_node", Verdict.PASS), ("health.gpu_count", Verdict.UNKNOWN)]
    assert "every GPU of its capacity is allocatable" in f[0].message
    planned = _node("kubectl-describe-node__7-gpus-allocatable.txt", gpu_count=8)
    assert next(x for x in planned if x.id == "health.gpu_count").verdict is Verdict.FAIL
    labelled = _node("kubectl-describe-node__7-gpus-allocatable.txt", lambda t: t.replace(
        "Roles:              worker", "Roles:              worker\nLabels:             nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3"))
    count = next(x for x in labelled if x.id == "health.gpu_count")
    assert count.verdict is Verdict.WARN and "so 7 suggests a GPU is missing" in count.message


def test_describe_node_allocatable_below_capacity_and_conditions():
    """Synthetic edits of the real 7-GPU worker: one GPU out of Allocatable (the device plugin reports it unhealthy)
    warns (half or more withdrawn fails: held-out round 256, 4 of 8); a Conditions table with Ready False fails and DiskPressure True warns."""
    gpu7 = "nvidia.com/gpu:          7"
    one_down = _node("kubectl-describe-node__7-gpus-allocatable.txt",  # the second (Allocatable) line: 6
                     lambda t: "nvidia.com/gpu:          6".join(t.rsplit(gpu7, 1)))
    short = next(x for x in one_down if x.id == "driver.k8s_node")
    assert short.verdict is Verdict.WARN and "nvidia.com/gpu allocatable 6 of capacity 7" in short.message
    half = _node("kubectl-describe-node__7-gpus-allocatable.txt", lambda t: "nvidia.com/gpu:          3".join(t.rsplit(gpu7, 1)))
    assert next(x for x in half if x.id == "driver.k8s_node").verdict is Verdict.FAIL
    conditions = ("Conditions:\n  Type             Status  LastHeartbeatTime  Reason  Message\n"
                  "  ----             ------  -----------------  ------  -------\n"
                  "  MemoryPressure   False   x                  KubeletHasSufficientMemory  ok\n"
                  "  DiskPressure     True    x                  KubeletHasDiskPressure      disk\n"
                  "  Ready            False   x                  KubeletNotReady             PLEG\n")
    sick = _node("kubectl-describe-node__7-gpus-allocatable.txt", lambda t: t.replace("Addresses:", conditions + "Addresses:"))
    got = {(x.id, x.verdict) for x in sick}
    assert ("driver.k8s_node", Verdict.FAIL) in got and ("driver.k8s_node", Verdict.WARN) in got
    assert any("DiskPressure is True" in x.message for x in sick)


def test_nvidia_smi_missing_in_a_container_means_it_got_no_gpus_and_a_device_list_alone_is_read():
    """Docker's 'exec: "nvidia-smi": executable file not found in $PATH' (real, held-out round 135): the container got
    no GPUs, driver.container_toolkit FAIL with --gpus in the remedy; nvidia-container-cli info's device blocks without
    the NVRM line above them (real, same round) still count the GPUs."""
    from wizard.explain import explain_text

    r = explain_text((PUBLIC / "docker-run-nvidia-smi__centos7-no-nvidia-runtime-executable-file-not-found.txt")
                     .read_text(), "d")
    (f,) = [f for f in r.findings if f.id == "driver.container_toolkit"]
    assert f.verdict is Verdict.FAIL and "got no GPUs" in f.message and "--gpus all" in f.remedy
    info = explain_text((PUBLIC / "nvidia-container-cli-info__8x-rtx3080-devices-listed-arch-8.6-partial.txt")
                        .read_text(), "i")
    assert info.kind == "nvidia-container-cli" and "6 GPUs" in info.findings[0].message


def test_device_plugin_log_and_node_labels_against_what_the_kubelet_advertises():
    """NVIDIA k8s-device-plugin logs (real, held-out round 137): registered with the kubelet PASS; NVML not detected /
    "No devices found" FAIL. A `kubectl describe node | grep nvidia.com/gpu` whose labels count 1 GPU while Capacity
    and Allocatable say 0 (real, same round) fails driver.k8s_node; the Capacity/Allocatable blocks alone are read."""
    from wizard.explain import explain_text

    ok = explain_text((PUBLIC / "nvidia-device-plugin-log__microshift-a30-nvml-found-registered-with-kubelet-healthy.txt")
                      .read_text(), "p")
    assert ok.kind == "k8s-device-plugin-log" and ok.verdict is Verdict.PASS
    bad = explain_text((PUBLIC / "nvidia-device-plugin-log__k3s-4x-a100-nvml-not-detected-no-devices-found-partial.txt")
                       .read_text(), "p")
    assert bad.verdict is Verdict.FAIL and "found no GPU" in bad.findings[0].message
    grep = explain_text((PUBLIC / "kubectl-describe-node-grep-nvidia__eks-g5-a10g-labels-present-count-1-capacity-0.txt")
                        .read_text(), "g")
    f = next(f for f in grep.findings if f.id == "driver.k8s_node")
    assert f.verdict is Verdict.FAIL and "nvidia.com/gpu.count=1" in f.message
    blocks = explain_text((PUBLIC / "kubectl-describe-node__32cpu-8-gpus-capacity-allocatable-8-healthy-partial.txt")
                          .read_text(), "b")
    assert blocks.kind == "kubectl-describe-node" and any("advertises 8 GPUs" in f.message for f in blocks.findings)


def test_a_pod_not_ready_after_many_restarts_is_crash_looping():
    """The GPU Operator's validator at Init:2/5 with 46 restarts (real, held-out round 137): driver.k8s_pods FAIL, not
    "not ready yet"."""
    from wizard.explain import explain_text
    from wizard.rules.container import RESTARTS_STUCK

    r = explain_text((PUBLIC / "kubectl-get-pods-o-wide__gpu-operator-quadro-p400-worker-operator-validator-init-2-5-46-"
                               "restarts.txt").read_text(), "k")
    f = next(f for f in r.findings if f.id == "driver.k8s_pods")
    assert f.verdict is Verdict.FAIL and "46 restarts" in f.message and RESTARTS_STUCK == 5


def test_zero_gpus_in_capacity_fails_and_tegra_discovery_warns():
    zero = explain_text(text(PUBLIC / "kubectl-describe-node__gpu-capacity-zero-microk8s.txt"))
    assert zero.verdict is Verdict.FAIL and "is 0 in Capacity and Allocatable" in zero.findings[0].message
    tegra = explain_text(text(PUBLIC / "nvidia-device-plugin-log__x86-80cpu-4gpu-discovery-strategy-tegra-partial.txt"))
    assert tegra.kind == "k8s-device-plugin-log" and tegra.verdict is Verdict.WARN
    assert 'deviceDiscoveryStrategy "tegra"' in tegra.findings[0].message
    bare = explain_text(text(PUBLIC / "kubectl-describe-node__k8s122-ubuntu2004-no-nvidia-gpu-in-capacity-partial.txt"))
    assert bare.kind == "kubectl-describe-node" and bare.verdict is Verdict.WARN


def test_daemonsets_not_ready_rollout_behind_and_device_plugin_missing():
    """kubectl get daemonsets (real): every GPU Operator daemonset 0 of 1 ready after 31 minutes fails (round 183);
    ready but 3 of 4 up to date warns (round 170); a trimmed listing of the operator's daemonsets without its device
    plugin fails (round 207)."""
    def verdicts(name: str) -> list:
        return [(f.id, f.verdict) for f in explain_text(text(PUBLIC / name), name).findings]

    assert verdicts("kubectl-get-ds__gpu-operator-microk8s-none-ready.txt") == [("driver.k8s_pods", Verdict.FAIL)]
    assert verdicts("kubectl-get-daemonset__nvidia-driver-upgrade-stuck-3-of-4-up-to-date.txt") == [
        ("driver.k8s_pods", Verdict.WARN)]
    missing = explain_text(text(PUBLIC / "kubectl-get-ds__eks-gpu-operator-device-plugin-ds-missing.txt"), "x")
    assert missing.verdict is Verdict.FAIL and "not its device plugin" in missing.findings[0].message


def test_the_node_object_of_kubectl_get_node_yaml_or_json_is_read_as_describe_node():
    """``kubectl get node -o yaml`` (real, NVIDIA/k8s-device-plugin#58: 16 GPUs in capacity, 0 allocatable) and
    synthetic_ JSON and YAML conditions of the same NodeStatus fields."""
    from wizard.parsers.container import detect_k8s_node, manifest_as_described, parse_k8s_node

    yaml = text(PUBLIC / "kubectl-get-node-yaml__allocatable-gpu-0-of-capacity-16-partial.txt")
    assert detect_k8s_node(yaml) == 0.9
    node = parse_k8s_node(yaml)
    assert node is not None and node.gpus(node.capacity) == {"nvidia.com/gpu": 16}
    assert node.gpus(node.allocatable) == {"nvidia.com/gpu": 0}
    r = explain_text(yaml)
    assert r.kind == "kubectl-describe-node" and r.verdict is Verdict.FAIL
    synthetic_json = ('{"status": {"allocatable": {"cpu": "16", "nvidia.com/gpu": "8", "pods": "110"},\n'
                      '  "capacity": {"cpu": "16", "nvidia.com/gpu": "8", "pods": "110"}}}')
    assert "Allocatable:\n  cpu:  16\n  nvidia.com/gpu:  8" in manifest_as_described(synthetic_json)
    assert explain_text(synthetic_json).verdict is Verdict.PASS
    synthetic_not_ready = yaml.replace('nvidia.com/gpu: "0"', 'nvidia.com/gpu: "16"') + (
        "      conditions:\n      - lastHeartbeatTime: x\n        status: \"False\"\n        type: Ready\n")
    assert parse_k8s_node(synthetic_not_ready).conditions == {"Ready": "False"}  # type: ignore[union-attr]
    assert explain_text(synthetic_not_ready).verdict is Verdict.FAIL
    assert manifest_as_described("allocatable resources are listed below\n") == ""


def test_another_gpu_resource_registered_at_zero_warns():
    """Held-out round 280 (real): Allocatable with nvidia.com/gpu 1 and a sharing plugin's deepomatic.com/shared-gpu 0
    passed; the shared resource is registered with nothing in it, so pods asking for it stay Pending: warn naming it."""
    f = [x for x in explain_text(text(PUBLIC / "kubectl-describe-node__allocatable-shared-gpu-zero-nvidia-gpu-one.txt"))
         .findings if x.verdict is Verdict.WARN]
    assert [x.id for x in f] == ["driver.k8s_node"] and "deepomatic.com/shared-gpu is 0" in f[0].message


def test_kubectl_get_pods_is_not_a_query_gpu_csv():
    """Held-out round 280 (real): kubectl get pods' header 'NAMESPACE NAME READY STATUS ...' scored as a --query-gpu
    CSV header ('NAMESPACE' began with the property 'name'), and the CrashLoopBackOff driver pods passed as '4
    GPUs'; a property name is whole or followed by '.'/'_'."""
    r = explain_text(text(PUBLIC / "kubectl-get-pods__gpu-operator-2019-driver-daemonset-crashloop.txt"))
    assert r.kind == "kubectl-get-pods" and r.verdict is Verdict.FAIL
    assert "nvidia-driver-daemonset-tm22t CrashLoopBackOff" in r.findings[0].message


def test_a_ready_pod_that_keeps_restarting_warns():
    """Held-out round 292 (real): four dcgm-exporter pods Running and ready passed; one has 11 restarts, the last 7m47s
    ago: a container that keeps dying, warn. Restarts long ago (46h) do not count (RESTART_RECENT_S)."""
    t = text(PUBLIC / "kubectl-get-pods__dcgm-exporter-11-restarts-7m-ago.txt")
    (f,) = explain_text(t).findings
    assert f.verdict is Verdict.WARN and "nvidia-dcgm-exporter-rfwj8 11 restarts, the last 7m47s ago" in f.message
    calm = t.replace("11 (7m47s ago)", "11 (46h ago)  ")
    assert [x.verdict for x in explain_text(calm).findings] == [Verdict.PASS]
    assert container.RESTART_RECENT_S == 3600


def test_only_the_monitoring_pod_crashlooping_warns_gpu_monitoring_down():
    from wizard.explain import explain_text
    from wizard.model import Verdict
    from tests.probe_data import PUBLIC, text

    r = explain_text(text(PUBLIC / "oc-get-pods__gpu-operator-nvidia-dcgm-crashloop-1426-restarts-rest-healthy-openshift-dcgm18.txt"))
    assert r.verdict is Verdict.WARN and "GPU monitoring is down" in r.findings[0].message
