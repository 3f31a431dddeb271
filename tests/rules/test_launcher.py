"""wizard/rules/launcher.py: launcher pastes judged by what they prove (real outputs from tests/data/public)."""

from __future__ import annotations

from pathlib import Path

from wizard.model import Verdict
from wizard.parsers.launcher import LauncherLog, RankExit
from wizard.rules.launcher import judge_text, launch_result, rank_exits

PUBLIC = Path(__file__).resolve().parents[1] / "data" / "public"


def _judge(name: str):
    return judge_text((PUBLIC / name).read_text())


def test_sigkill_warns_and_points_at_host_ram_and_dmesg():
    [f] = _judge("torchrun__cppo6-accelerate-rank0-sigkill-9-root-cause-partial.txt")
    assert (f.id, f.verdict) == ("node.rank_exit", Verdict.WARN)
    assert "SIGKILL" in f.message and "rank 0" in f.message
    assert "OOM" in f.remedy and "dmesg" in f.remedy and "signal.7" in f.source
    assert any("Signal 9 (SIGKILL)" in ln for ln in f.evidence)


def test_deepspeed_return_code_minus_9_is_sigkill():
    [f] = _judge("deepspeed-launch__ds3232-killing-subprocess-return-code-minus-9.txt")
    assert f.verdict is Verdict.WARN and "SIGKILL" in f.message and "OOM" in f.remedy


def test_sigbus_on_one_host_at_once_points_at_shm():
    [f] = _judge("torchrun__openocr71-2ranks-sigbus-7-same-host-partial.txt")
    assert f.verdict is Verdict.WARN
    assert "ranks 0, 1" in f.message and "SIGBUS" in f.message and "at once" in f.message
    assert "/dev/shm" in f.remedy and "--shm-size" in f.remedy


def test_sigabrt_names_the_nccl_watchdog():
    [f] = _judge("torchrun__picotron6-8ranks-sigabrt-6-root-cause-excerpt.txt")
    assert f.verdict is Verdict.WARN and "SIGABRT" in f.message and "watchdog" in f.remedy


def test_exit_code_one_without_traceback_is_unknown_and_says_where_to_look():
    [f] = _judge("torchrun__glm130b100-ranks-6-7-exitcode-1-no-traceback-partial.txt")
    assert f.verdict is Verdict.UNKNOWN and "code 1" in f.message and "ranks 6, 7" in f.message
    assert "@record" in f.remedy and "TORCHELASTIC_ERROR_FILE" in f.remedy
    assert "first observed failure: rank 6" in f.message


def test_all_processes_exiting_zero_passes():
    [f] = _judge("deepspeed-launch__domino-gpt3-4proc-iterations-all-exit-successfully.txt")
    assert (f.id, f.verdict) == ("node.launch", Verdict.PASS) and "all 4" in f.message


def test_torchrun_agents_succeeded_passes():
    [f] = _judge("torchrun__awsome-cpu-ddp-2node-4proc-worker-group-succeeded.txt")
    assert f.verdict is Verdict.PASS and "2 nodes x 4 processes" in f.message


def test_launch_plan_alone_is_unknown_with_what_it_shows():
    text = (PUBLIC / "deepspeed-launch__ds618-2gpu-launch-plan-then-nameerror-in-script.txt").read_text()
    plan = "\n".join(text.splitlines()[:7])
    [f] = judge_text(plan)
    assert f.verdict is Verdict.UNKNOWN and "world size 2" in f.message and "CUDA_VISIBLE_DEVICES=0,1" in f.message


def test_single_process_plan_says_it_proves_nothing_about_multi_gpu():
    log = LauncherLog(tool="deepspeed", nnodes=1, procs_per_node=1, world_size=1, plan=["dist_world_size=1"])
    [f] = launch_result(log)
    assert f.verdict is Verdict.UNKNOWN and "single-process" in f.message


def test_sigterm_only_is_unknown_first_failure_elsewhere():
    log = LauncherLog(tool="torchrun", exits=[RankExit(-15, rank=1, local_rank=1)])
    [f] = rank_exits(log)
    assert f.verdict is Verdict.UNKNOWN and "SIGTERM" in f.message


def test_one_host_alone_in_a_multi_node_job_is_named():
    log = LauncherLog(tool="torchrun", nnodes=4, exits=[RankExit(-9, rank=8, local_rank=0, host="node3"),
                                                        RankExit(-9, rank=9, local_rank=1, host="node3")])
    [f] = rank_exits(log)
    assert "node3 alone" in f.message


def test_garbage_is_unknown_never_a_traceback():
    [f] = judge_text("\x00\x01 not a launcher\n[launch.py:1:x]")
    assert f.verdict is Verdict.UNKNOWN


def test_a_launcher_paste_that_quotes_the_nccl_error_is_judged_by_it() -> None:
    """The real pytorch#79847 paste: the rank's traceback ends in ncclInternalError and the elastic agent reports the
    exit: the NCCL error's own finding (node.nccl_errors, fail) joins the rank-exit finding."""
    from wizard.explain import explain_text

    r = explain_text((PUBLIC / "torchrun__pytorch79847-single-gpu-ddp-ncclinternalerror-nccl-2.10.3.txt").read_text(), "x")
    assert r.verdict.value == "fail"
    assert any(f.id == "node.nccl_errors" and "ncclInternalError" in f.message for f in r.findings)


def test_a_dataloader_worker_killed_by_a_bus_error_fails_on_shared_memory():
    """PyTorch's DataLoader saying a worker died of SIGBUS (real: msr-fiddle/pipedream#28, held-out round 9): the
    run crashed for want of /dev/shm, named as os.shm with the container/Kubernetes fix."""
    from tests.probe_data import PUBLIC, text as read
    from wizard.explain import explain_text

    r = explain_text(read(PUBLIC / "pytorch-error__dataloader-bus-error-insufficient-shm.txt"), "dl")
    f = next(f for f in r.findings if f.id == "os.shm")
    assert r.verdict is Verdict.FAIL and f.verdict is Verdict.FAIL and "SIGBUS" in f.message
    assert "--shm-size" in f.remedy and any("bus error" in ln.lower() for ln in f.evidence)


def test_the_launcher_stopping_its_workers_without_the_cause_is_unknown_and_asks_for_the_first_traceback():
    """torch.multiprocessing.spawn's "Terminating process N via signal SIGTERM" (and torchrun's "Sending process N
    closing signal SIGTERM") mean a worker failed or the job was interrupted; what failed is not in such a paste.
    Lines of a public report (RUCAIBox/RecBole#2069), cut to the spawn lines."""
    from wizard.explain import explain_text

    paste = ("[rank5]:[W socket.cpp:432] [c10d] While waitForInput, poolFD failed with (errno: 0 - Success).\n"
             "W0719 18:42:55.168000 131513588901696 torch/multiprocessing/spawn.py:145] Terminating process 25364 "
             "via signal SIGTERM\n"
             "W0719 18:43:03.904000 131513588901696 torch/multiprocessing/spawn.py:145] Terminating process 25365 "
             "via signal SIGTERM\n")
    r = explain_text(paste)
    assert r.kind == "launcher" and r.verdict is Verdict.UNKNOWN
    f = r.findings[0]
    assert "stopped 2 worker process(es)" in f.message and "traceback" in f.remedy
    torchrun = explain_text("W1201 10:00:00.000000 1 torch/distributed/elastic/multiprocessing/api.py:897] Sending "
                            "process 4242 closing signal SIGTERM\n")
    assert torchrun.verdict is Verdict.UNKNOWN and "stopped 1 worker" in torchrun.findings[0].message


def test_a_rendezvous_that_never_connected_fails_the_launch_as_a_network_problem():
    """Held-out r96: torchrun's agent timed out connecting to the c10d store ("The client socket has timed out after
    60s while trying to connect to 192.0.0.1:1234", RendezvousConnectionError): no worker started. It was "launcher
    start-up only" (unknown); it fails node.launch, naming the endpoint, as a network/launch problem."""
    from wizard.explain import explain_text

    e = explain_text((PUBLIC / "torchrun__c10d-rendezvous-connection-error-client-socket-timeout-60s.txt").read_text())
    f = [x for x in e.findings if x.id == "node.launch"]
    assert e.verdict is Verdict.FAIL and [x.verdict for x in f] == [Verdict.FAIL]
    assert "rendezvous at 192.0.0.1:1234" in f[0].message and "not a GPU fault" in f[0].message
    assert "--rdzv_endpoint" in f[0].remedy and any("RendezvousConnectionError" in ln for ln in f[0].evidence)


def test_a_rendezvous_port_in_use_names_the_port_and_a_store_connect_timeout_is_a_rendezvous_failure():
    """c10d's "failed to bind to 0.0.0.0:22 (errno: 98 - Address already in use)" (real, held-out round 129): node.launch
    FAIL naming port 22 as sshd's and how to find the holder; TCPStore's "connect() timed out. Original timeout was
    60000 ms" under the elastic agent (real, same round): the ranks never met."""
    (f,) = _judge("torch-distributed-launch__c10d-master-port-22-ssh-address-in-use-partial.txt")
    assert f.id == "node.launch" and f.verdict is Verdict.FAIL
    assert "could not listen on port 22" in f.message and "sshd" in f.message and "ss -ltnp 'sport = :22'" in f.remedy
    (g,) = _judge("torchrun__c10d-store-port-29500-address-already-in-use.txt")
    assert "port 29500" in g.message and "sshd" not in g.message
    (h,) = _judge("torchrun__c10d-rendezvous-tcpstore-connect-timed-out-60000ms-partial.txt")
    assert h.verdict is Verdict.FAIL and "never met" in h.message and "connect() timed out" in h.evidence[0]


def test_a_training_logs_steps_pass_and_a_nan_loss_warns_or_fails():
    """Step lines of real training jobs (held-out round 141: torchtitan, Megatron-DeepSpeed, DeepSpeed, torchtune):
    node.training_log PASS naming the steps, the loss and a throughput; the torchtitan log with its last loss replaced by
    nan (synthetic, built here) FAILs, with its first loss replaced WARNs."""
    import re

    from wizard.explain import explain_text

    for name, words in (("pytorch-train-log__4gpu-torchtitan-llama3-8b-steps-healthy-mfu-33-partial.txt",
                         ("steps 1 to 10", "loss 12.2465")),
                        ("deepspeed-train-log__zero-steps-40-60-samplespersec-83-steady-partial.txt",
                         ("steps 40 to 60", "SamplesPerSec")),
                        ("torchtune-train-log__multinode-lora-first-steps-loss-2p8-healthy-partial.txt",
                         ("steps 1 to 2", "loss 2.79979"))):
        r = explain_text((PUBLIC / name).read_text(), name)
        assert r.kind == "training-log" and r.verdict is Verdict.PASS, (name, r.kind)
        assert all(w in r.findings[0].message for w in words), r.findings[0].message
    text = (PUBLIC / "pytorch-train-log__4gpu-torchtitan-llama3-8b-steps-healthy-mfu-33-partial.txt").read_text()
    nan = explain_text(re.sub(r"loss: 10\.2391", "loss: nan", text), "synthetic_nan_loss")
    # NaN at the last step shown: the run no longer trains (held-out round 370: experts failed such runs)
    assert nan.verdict is Verdict.FAIL and "NaN" in nan.findings[0].message
    lines = text.splitlines()
    first_nan = "\n".join([re.sub(r"loss: [\d.]+", "loss: nan", lines[0])] + lines[1:])  # synthetic_: a step it went past
    assert explain_text(first_nan, "synthetic_nan_first").verdict is Verdict.WARN


def test_rendezvous_heartbeat_errors_after_mlperf_run_stop_are_teardown():
    """Held-out round 299 (real): MLPerf's run_stop with status success, then four agents' 'failed to send a keep-alive
    heartbeat ... RendezvousTimeoutError': it failed as 'the ranks never met'; the store went away as the job ended."""
    from wizard.explain import explain_text

    t = (PUBLIC / "unrecognised__clemson-openfold-run-success-rendezvous-heartbeat-warnings.txt").read_text()
    f = [x for x in explain_text(t).findings if x.id == "node.launch"]
    assert [x.verdict for x in f] == [Verdict.PASS] and "run_stop with status success" in f[0].message


def test_fairseq_train_inner_lines_are_a_training_log_that_passes():
    from wizard.explain import explain_text

    r = explain_text((PUBLIC / "training-log__fairseq-transformer-gpu-first-600-updates-loss-falling-steady-wps-fairseq2338.txt").read_text())
    assert r.kind == "training-log" and r.verdict is Verdict.PASS


def _tl(name: str):
    from wizard.explain import explain_text

    r = explain_text((PUBLIC / name).read_text())
    assert r.kind == "training-log", (name, r.kind)
    return [f for f in r.findings if f.id == "node.training_log"][0]


def test_nan_on_every_step_fails_and_one_skipped_nan_step_warns():
    f = _tl("training-log__megatron-deepspeed-grad-norm-nan-no-lm-loss.txt")  # "grad norm: nan" on each iteration
    assert f.verdict is Verdict.FAIL and "no longer trains" in f.message
    assert _tl("training-log__nanogpt-1xv100-fp16-loss-nan-after-iter-3000.txt").verdict is Verdict.FAIL
    one = _tl("training-log__megatron-llm-falcon40b-bad-grad-norm-nan-skipped.txt")  # one bad grad norm, then on
    assert one.verdict is Verdict.WARN


def test_fp16_loss_scale_collapse_fails_and_start_up_calibration_passes():
    low = _tl("training-log__deepspeed-zero2-t5-11b-overflow-loss-scale-stuck-at-1.txt")
    assert low.verdict is Verdict.FAIL and "scale fell to 1" in low.message and "bf16" in low.remedy
    mid = _tl("training-log__deepspeed-hf-lora-overflow-loss-scale-collapsing-mid-run.txt")
    assert mid.verdict is Verdict.FAIL and "scale fell to 2" in mid.message
    ok = _tl("training-log__deepspeed-fp16-initial-overflow-loss-scale-calibration.txt")
    assert ok.verdict is Verdict.PASS and "calibration" in ok.message


def test_a_loss_that_never_moves_fails_as_not_learning():
    f = _tl("training-log__litgpt-loss-stuck-constant-10.8259.txt")
    assert f.verdict is Verdict.FAIL and "stays at exactly 10.8259" in f.message and "not learning" in f.message
