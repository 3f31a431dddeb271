"""Tests of wizard/rules/toolwords.py (the program's own words, for outputs of a kind bringup does not read)."""

from __future__ import annotations

from wizard.explain import explain_text
from wizard.model import Verdict
from wizard.rules import toolwords

from tests.probe_data import PUBLIC, text


def test_a_failed_result_line_fails_and_says_the_verdict_is_the_programs():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__vllm-custom-allreduce-p2p-disabled.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL]
    assert "FAILED" in fs[0].evidence and "program's own words" in fs[0].message and fs[0].remedy


def test_no_devices_found_fails_as_no_gpu_visible():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__device-plugin-no-devices-found.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "found no GPU" in fs[0].message
    assert "container runtime" in fs[0].remedy


def test_error_level_log_lines_warn_and_are_quoted():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__nv-hostengine-not-attached-to-nvswitches.txt"))
    assert [f.verdict for f in fs] == [Verdict.WARN] and "level ERROR" in fs[0].message
    assert "Not attached to NvSwitches" in fs[0].evidence[0]


def test_a_passed_test_passes_only_without_any_contrary_word():
    assert [f.verdict for f in toolwords.judge("Running vectorAdd\nTest PASSED\nDone\n")] == [Verdict.PASS]
    both = toolwords.judge("Test PASSED\nERROR: could not open /dev/nvidia1\n")
    assert [f.verdict for f in both] == [Verdict.WARN]


def test_a_python_traceback_is_the_programs_error_not_the_machines():
    fs = toolwords.judge(text(PUBLIC / "deepspeed-launch__ds618-2gpu-launch-plan-then-nameerror-in-script.txt"))
    assert [f.verdict for f in fs] == [Verdict.UNKNOWN] and "NameError" in fs[0].message
    assert "says nothing about the machine" in fs[0].message


def test_counts_of_zero_errors_are_not_failures_and_plain_text_says_nothing():
    assert [f.verdict for f in toolwords.judge("tests: 12 passed, 0 failed\nerrors: 0\n")] == [Verdict.PASS]
    assert toolwords.judge("the quick brown fox\n") == []


def test_explain_uses_the_programs_words_only_for_unrecognised_input():
    r = explain_text(text(PUBLIC / "unrecognised__polaris-offline-xid74-reseat.txt"))
    assert r.kind is None and r.verdict is Verdict.FAIL
    assert [f.id for f in r.findings] == ["explain.program_said"]
    # slurmd's missing /dev/nvidia0 became its log's own rule (held-out round 314): judged there, not by these words
    r = explain_text(text(PUBLIC / "unrecognised__slurmd-gres-dev-nvidia0-missing.txt"))
    assert r.kind == "slurmd-log" and r.verdict is Verdict.FAIL
    assert not any(f.id == "explain.program_said" for f in r.findings)
    assert any("/dev/nvidia0" in f.message for f in r.findings)
    # the device plugin's log became a kind of its own (held-out round 137): its rules judge it now
    r = explain_text(text(PUBLIC / "unrecognised__device-plugin-no-devices-found.txt"))
    assert r.kind == "k8s-device-plugin-log" and [f.id for f in r.findings] == ["driver.k8s_node"]
    # a recognised kind is judged by its own rules, never by these words
    r = explain_text(text(PUBLIC / "kernel-log__nvsentinel-155-fallen-off-bus-no-xid.txt"))
    assert r.kind == "kernel-log" and not any(f.id == "explain.program_said" for f in r.findings)


def test_fatal_lines_and_systemd_start_failures_fail():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__slurmd-gres-dev-nvidia0-missing.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "/dev/nvidia0" in fs[0].message


def test_a_cuda_error_number_is_named_from_the_cuda_error_table_with_its_class_verdict():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__ollama-cudart-init-999-after-sleep.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL]
    assert "CUDA error 999 = cudaErrorUnknown" in fs[0].message and "nvidia_uvm" in fs[0].remedy
    # out of memory (class workload) is the program's load, not the machine: a warn
    fs = toolwords.judge("myapp: cudaMalloc failure: 2\n")
    assert [f.verdict for f in fs] == [Verdict.WARN] and "cudaErrorMemoryAllocation" in fs[0].message


def test_a_program_finding_its_cuda_devices_passes():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__llamacpp-cuda-init-rtx4050-laptop.txt"))
    assert [f.verdict for f in fs] == [Verdict.PASS] and "found 1 CUDA devices" in fs[0].message


def test_a_stopped_build_and_a_gpu_below_the_required_compute_capability_fail():
    assert [f.verdict for f in toolwords.judge(text(PUBLIC / "unrecognised__te954-cmake-cudnn-not-found.txt"))] == [
        Verdict.FAIL]
    fs = toolwords.judge(text(PUBLIC / "unrecognised__te15-fp8-compute-capability.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "compute capability 9.x required" in fs[0].message


# ------------------------------------------------------------------ the CUDA driver chain is not reachable


def test_cuinit_failing_fails_and_names_the_error_where_the_cuda_error_table_knows_it():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__numba-s-cuinit-unknown-cuda-error.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "cuInit failed with UNKNOWN_CUDA_ERROR (code -1)" in fs[0].message
    assert "does not name" in fs[0].message and "lsmod | grep nvidia" in fs[0].remedy
    assert "cuda-driver-api/group__CUDA__INITIALIZE" in fs[0].source
    # TensorFlow's form (tensorflow/tensorflow#394 prints it this way), a CUresult the table knows
    fs = toolwords.judge("E tensorflow/stream_executor/cuda/cuda_driver.cc:481] failed call to cuInit: "
                         "CUDA_ERROR_NO_DEVICE: no CUDA-capable device is detected\n")
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "CUDA_ERROR_NO_DEVICE (100" in fs[0].message
    assert "CUDA_VISIBLE_DEVICES" in fs[0].remedy


def test_libcuda_that_cannot_be_opened_fails_as_no_driver_visible():
    fs = toolwords.judge("ImportError: libcuda.so.1: cannot open shared object file: No such file or directory\n")
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "no NVIDIA driver user space is visible" in fs[0].message
    assert "libcudart" not in fs[0].message


def test_a_cpu_only_build_without_libcudart_fails_and_libcudart_alone_warns():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__bitsandbytes-compiled-without-gpu-support-no-libcudart.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "CPU-only build" in fs[0].message
    assert "libcudart.so was not found" in fs[0].message and "GPU path is not installed" in fs[0].message
    fs = toolwords.judge("CUDA_SETUP: WARNING! libcudart.so not found in any environmental path.\n")
    assert [f.verdict for f in fs] == [Verdict.WARN] and "libcudart.so" in fs[0].message


def test_a_gpu_below_the_builds_compute_capability_fails_naming_both():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__tensorflow-ignoring-gpu-grid-k520-cc3.0-min-3.5.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL]
    assert "GRID K520 (compute capability 3.0)" in fs[0].message and "3.5 or higher" in fs[0].message
    assert "not faulty" in fs[0].message and "tensorflow.org" in fs[0].source


def test_cudnn_that_cannot_start_fails_with_the_usual_causes():
    fs = toolwords.judge(text(PUBLIC / "unrecognised__jax-h100-could-not-create-cudnn-handle-internal-error.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "cannot start cuDNN" in fs[0].message
    assert "memory already taken" in fs[0].message and "versions that do not go together" in fs[0].message
    assert any("Could not create cudnn handle" in e for e in fs[0].evidence)
    assert "cudnn" in fs[0].source.lower() and "XLA_PYTHON_CLIENT_PREALLOCATE" in fs[0].remedy
    # the chain's causes are listed most fundamental first: no libcuda before the cuInit it makes fail
    causes = [c.cause for c in toolwords.chain_words(["Could not open libcuda.so", "cuInit failed: 999"])]
    assert causes == ["libcuda", "cuinit"]


def test_systemctl_job_failed_fails_and_ibdiagnet_warning_lines_warn():
    """Real pastes: `service nvidia-fabricmanager start` answering "Job for nvidia-fabricmanager.service failed"
    (NVIDIA/gpu-operator#356) fails; ibdiagnet 1.5.7's `-W-` lines (ArchWiki InfiniBand page) are its warnings."""
    from wizard.explain import explain_text

    r = explain_text((PUBLIC / "unrecognised__gpuop356-service-start-fabricmanager-job-failed.txt").read_text(), "a")
    assert r.verdict is Verdict.FAIL and any("Job for nvidia-fabricmanager.service failed" in f.message for f in r.findings)
    r = explain_text((PUBLIC / "unrecognised__archwiki-ibdiagnet157-2node-ddr-ipoib-suboptimal-rate.txt").read_text(), "b")
    assert r.verdict is Verdict.WARN and any("Suboptimal rate for group" in f.message for f in r.findings)


def test_triton_refusing_an_old_gpu_fails_naming_both_capabilities():
    """PyTorch's GPUTooOldForTriton (real line: unslothai/unsloth#2816)."""
    line = ("GPUTooOldForTriton: Found Tesla P100-PCIE-16GB which is too old to be supported by the triton GPU "
            "compiler, which is used as the backend. Triton only supports devices of CUDA Capability >= 7.0, but "
            "your device is of CUDA capability 6.0")
    fs = toolwords.judge(line)
    assert [f.verdict for f in fs] == [Verdict.FAIL]
    assert "Tesla P100-PCIE-16GB" in fs[0].message and "6.0" in fs[0].message and "7.0" in fs[0].message
    assert "Triton" in fs[0].message and "not faulty" in fs[0].message


def test_an_nvidia_tool_the_kernel_cannot_execute_fails():
    """containerd refusing nvidia-smi's binary (real line: kubeflow/kubeflow#7045)."""
    line = ('error: Internal error occurred: error executing command in container: failed to exec in container: '
            'failed to start exec "a80d": OCI runtime exec failed: exec failed: unable to start container process: '
            'exec /usr/bin/nvidia-smi: exec format error: unknown')
    fs = toolwords.judge(line)
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "exec format error" in fs[0].message
    assert "file /usr/bin/nvidia-smi" in fs[0].remedy


def test_a_gpu_or_rdma_kernel_module_that_will_not_load_fails_with_the_reason_explained():
    """modprobe's refusal at the end of a DKMS install (real line: Mellanox/nv_peer_memory#8); an unrelated module's
    refusal stays a plain ERROR line (warn)."""
    fs = toolwords.judge("DKMS: install completed.\nmodprobe: ERROR: could not insert 'nv_peer_mem': Invalid argument\n")
    assert [f.verdict for f in fs] == [Verdict.FAIL]
    assert "nv_peer_mem" in fs[0].message and "does not fit this kernel" in fs[0].message and "dmesg" in fs[0].remedy
    sb = toolwords.judge("modprobe: ERROR: could not insert 'nvidia': Key was rejected by service\n")
    assert sb[0].verdict is Verdict.FAIL and "Secure Boot" in sb[0].message
    other = toolwords.judge("modprobe: ERROR: could not insert 'snd_hda_intel': Invalid argument\n")
    assert [f.verdict for f in other] == [Verdict.WARN]


def test_deepspeeds_cuda_toolkit_check_passes_a_same_major_pair_and_fails_a_refused_one():
    """DeepSpeed's op builder (the accepted line is real: EleutherAI/gpt-neox#940; the refusal is the builder's own
    wording for a major mismatch)."""
    ok = toolwords.judge("Installed CUDA version 11.6 does not match the version torch was compiled with 11.7 but "
                         "since the APIs are compatible, accepting this combination\n")
    assert [f.verdict for f in ok] == [Verdict.PASS] and "11.6" in ok[0].message and "same major" in ok[0].message
    bad = toolwords.judge("Installed CUDA version 12.1 does not match the version torch was compiled with 11.8, unable "
                          "to compile cuda/cpp extensions without a matching cuda version.\n")
    assert [f.verdict for f in bad] == [Verdict.FAIL] and "major" in bad[0].message and bad[0].remedy


def test_a_failure_leads_whatever_words_came_first():
    """A passing word before a failing one (DeepSpeed accepted the toolkit, then libcuda could not be loaded): the
    finding is the failure."""
    fs = toolwords.judge("Installed CUDA version 11.6 does not match the version torch was compiled with 11.7 but since "
                         "the APIs are compatible, accepting this combination\n"
                         "OSError: libcuda.so.1: cannot open shared object file: No such file or directory\n")
    assert fs[0].verdict is Verdict.FAIL


def test_a_cuda_error_named_by_its_text_is_resolved_through_the_table():
    """The CUDA samples print cudaGetErrorString's text (real line: NVIDIA/gpu-operator#1043's vectorAdd)."""
    fs = toolwords.judge("Failed to allocate device vector A (error code system not yet initialized)! [Vector addition "
                         "of 5000 elements]\n")
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "802" in fs[0].message and "Fabric Manager" in fs[0].message


def test_an_xid_a_program_reports_takes_the_xid_tables_verdict_and_an_unhealthy_gpu_fails():
    """The Kubernetes device plugin's own lines (real: NVIDIA/k8s-device-plugin issue log, Xid 69)."""
    log = ("2020/08/10 19:09:42 XidCriticalError: Xid=69 on Device=GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8, the device "
           "will go unhealthy.\n2020/08/10 19:09:42 'nvidia.com/gpu' device marked unhealthy: "
           "GPU-7540a9b3-eeb9-1214-1526-f93c9ea826a8\n")
    fs = toolwords.judge(log)
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "Xid 69" in fs[0].message and "unhealthy" in fs[0].message
    assert "k8s-device-plugin" in fs[0].source
    hw = toolwords.judge("node agent: observed Xid 79 on GPU 3\n")  # a hardware-class Xid alone fails by the table
    assert hw[0].verdict is Verdict.FAIL and "fallen off the bus" in hw[0].message.lower()
    app = toolwords.judge("node agent: observed Xid 13 on GPU 0\n")  # an application-class one warns
    assert app[0].verdict is Verdict.WARN


def test_a_libcuda_without_a_symbol_the_program_needs_fails_as_a_driver_too_old():
    """Open MPI mapping cuIpcOpenMemHandle_v2 (real: open-mpi/ompi issue paste)."""
    fs = toolwords.judge("An error occurred while trying to map in the address of a function.\n"
                         "  Function Name: cuIpcOpenMemHandle_v2\n"
                         "  Error string:  /lib64/libcuda.so.1: undefined symbol: cuIpcOpenMemHandle_v2\n"
                         "CUDA-aware support is disabled.\n")
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "cuIpcOpenMemHandle_v2" in fs[0].message
    assert "older than the CUDA" in fs[0].message and "stubs" in fs[0].remedy


def test_a_cuda_error_with_its_source_location_is_named_by_its_text():
    """"CUDA error (file.h:89): <text>" (real: Dao-AILab/flash-attention#285)."""
    fs = toolwords.judge("CUDA error (third_party/flash-attention/csrc/flash_attn/src/fmha_fwd_launch_template.h:89): "
                         "no kernel image is available for execution on the device\n")
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "209" in fs[0].message


def test_nccl_tests_cuda_failure_text_and_an_apptainer_host_without_nvidia_libraries_fail():
    """nccl-tests' "Test CUDA failure common.cu:1030 'system not yet initialized'" (real: NVIDIA/nccl-tests#338) and
    Singularity --nv finding no NVIDIA libraries on the host (real: a sylabs/singularity issue paste)."""
    fs = toolwords.judge("# Using devices\ngpu: Test CUDA failure common.cu:1030 'system not yet initialized'\n")
    assert [f.verdict for f in fs] == [Verdict.FAIL] and "802" in fs[0].message
    sg = toolwords.judge("INFO:    Could not find any NVIDIA binaries on this host!\n"
                         "WARNING: Could not find any NVIDIA libraries on this host!\n")
    assert [f.verdict for f in sg] == [Verdict.FAIL] and "no NVIDIA driver user space" in sg[0].message


def test_a_programs_usage_error_ran_nothing_so_it_is_unknown():
    """The real Windows `nvidia-smi topo -m` refusal (held-out round 12): 'Option -m is missing its value. Please run
    'nvidia-smi -h' for help.' is not an ERROR about the machine; argparse's refusal (synthetic_) reads the same."""
    from tests.probe_data import PUBLIC, text
    from wizard.explain import explain_text

    r = explain_text(text(PUBLIC / "unrecognised__nvidia-smi-topo-m-windows-missing-value-error.txt"))
    (f,) = r.findings
    assert f.verdict is Verdict.UNKNOWN and "refused its command line" in f.message
    argp = explain_text("usage: torchrun [-h]\ntorchrun: error: the following arguments are required: script\n")
    assert argp.findings[0].verdict is Verdict.UNKNOWN


def test_a_launch_of_the_wrong_shape_is_a_usage_error_not_a_machine_error() -> None:
    """GPCNet started on one node (held-out round 15): "must be run on at least 2 nodes" ran nothing: unknown."""
    r = explain_text(text(PUBLIC / "unrecognised__gpcnet-single-node-usage-error.txt"))
    assert r.verdict is Verdict.UNKNOWN and "refused its command line" in r.findings[0].message


def test_a_checks_tag_then_fail_and_a_failed_status_label_are_the_programs_failure():
    """round 20: IBM Autopilot's PCIe bandwidth check ("[[ PCIEBW ]] FAIL", "Node Status: PCIE Failed") was not
    recognised at all; its own verdict words now fail it, quoted. Synthetic lines for the other spellings."""
    e = explain_text(text(PUBLIC / "unrecognised__two-nodes-one-gpu-5gbs.txt"))
    assert e.verdict is Verdict.FAIL and "'Node Status: PCIE Failed'" in e.findings[0].message
    assert explain_text("[gpu-check] FAILED\n").verdict is Verdict.FAIL
    assert explain_text("Result: Failed\n").verdict is Verdict.FAIL
    assert explain_text("Status: Failed to parse\n").verdict is not Verdict.FAIL  # not a verdict at the end


def test_an_rdma_queue_pair_that_cannot_connect_fails_whatever_the_program():
    """Held-out round 32 (uccl-project/uccl#641): an expert-parallel transport on MI355X nodes printed "Failed to
    modify QP to RTR: Connection timed out" / "errno: 110" for every peer: the RDMA connection never came up (fail),
    the timeout said, the RoCE checks in the remedy. A queue pair that could not be created says so instead."""
    fs = toolwords.judge(text(PUBLIC / "uccl-ep__mi355x-ionic-roce-modify-qp-rtr-timeout.txt"))
    assert [f.verdict for f in fs] == [Verdict.FAIL]
    assert "could not connect an RDMA queue pair" in fs[0].message and "ETIMEDOUT, errno 110" in fs[0].message
    assert fs[0].evidence == ("Failed to modify QP to RTR: Connection timed out",) and "GID index" in fs[0].remedy
    (c,) = toolwords.judge("setting up\nibv_create_qp failed: Cannot allocate memory\n")  # synthetic_
    assert c.verdict is Verdict.FAIL and "could not create an RDMA queue pair" in c.message and "ulimit" in c.remedy


def test_a_cuda_samples_test_failed_line_fails_whatever_success_lines_came_before():
    """Held-out round 46 (simpleP2P on 2x RTX 4090): 'CUDA-capable device count: 2' then verification errors and
    'Test failed!': the program failed; the device count is not its verdict."""
    body = text(PUBLIC / "cuda-simplep2p__2x-rtx4090-peer-yes-verification-nan.txt")
    said = [f for f in toolwords.judge(body) if f.verdict is Verdict.FAIL]
    assert said and "'Test failed!'" in said[0].message
    # explain reads it as the CUDA sample it is (held-out round 57): its verify step failed, the verdict line quoted
    r = explain_text(body, "x")
    sample = [f for f in r.findings if f.id == "gpu.cuda_sample"]
    assert r.kind == "cuda-sample" and r.verdict is Verdict.FAIL and "Verification error" in sample[0].message
    assert "Test failed!" in sample[0].evidence
    assert [f.verdict for f in toolwords.judge("All 3 checks passed\ncheck failed: 0\n")] == [Verdict.PASS]


def test_nvidia_installer_errors_and_logrus_fatal_lines_are_failures():
    """Held-out round 49: nvidia-installer's "ERROR: An NVIDIA kernel module 'nvidia-drm' appears to already be
    loaded" stops the install (a failure, not a program's error line to read), and nvidia-mig-parted's logrus
    "FATA[0000] ..." is the program giving up."""
    r = explain_text(text(PUBLIC / "nvidia-installer__nvidia-drm-already-loaded.txt"), "x")
    assert r.verdict is Verdict.FAIL and "appears to already be loaded" in r.findings[0].message
    r = explain_text(text(PUBLIC / "mig-parted__apply-start-hook-failed.txt"), "x")
    assert r.verdict is Verdict.FAIL and "FATA[0000]" in r.findings[0].message
    assert [f.verdict for f in toolwords.judge("ERRO[0001] could not read the config\n")] == [Verdict.WARN]


def test_a_dotted_leader_fail_and_a_nix_builder_failure_fail():
    """Real (held-out rounds 66, 67): DCGM nvvs's "Memory GPU6 ...... FAIL" and Nix's "Reason: builder failed with exit
    code 2" building the nvidia-open module are the program saying it failed."""
    for name in ("nvvs__dgx1-v100-memory-test-gpu6-cuda-context-fail-partial.txt",
                 "nix-build__nvidia-open-590-module-build-fails-kernel-6.18-partial.txt"):
        r = explain_text(text(PUBLIC / name))
        assert r.verdict is Verdict.FAIL, name
    assert not toolwords._FAIL.search("Memory GPU5 ....................................... PASS")


def test_hwlocs_pass_enable_advice_is_not_a_pass_line():
    """Held-out r96: "Pass --enable-32bits-pci-domain to configure ..." (hwloc, at the top of an nccl-tests run) was
    quoted as "the program reports success"; a line-leading PASS counts in capitals only."""
    e = explain_text(text(PUBLIC / "nccl-debug-info__2node-h100nvl-a100-socket-podnet1-connect-timed-out-retrying.txt"))
    assert not any(f.id == "explain.program_said" and f.verdict is Verdict.PASS for f in e.findings)
    assert explain_text("PASS\n").verdict is not Verdict.FAIL


def test_a_full_filesystem_and_nccl_result_codes_in_other_programs_fail():
    """Held-out round 172: Python's 'OSError: [Errno 28] No space left on device', and CuPy's NcclError
    'NCCL_ERROR_REMOTE_ERROR: remote process exited or there was a network error' (issue 10, class 3)."""
    from tests.probe_data import PUBLIC, text

    full = explain_text(text(PUBLIC / "pytorch-traceback__oserror-errno-28-no-space-left-on-device-during-save.txt"))
    assert full.verdict is Verdict.FAIL and "is full" in full.findings[0].message
    nccl = explain_text(text(PUBLIC / "jax-trainer-log__8xh100-cupy-nccl-groupend-nccl-error-remote-error-partial.txt"))
    f = next(f for f in nccl.findings if f.verdict is Verdict.FAIL)
    assert "NCCL_ERROR_REMOTE_ERROR" in f.message


def test_a_store_barrier_that_never_fills_fails_in_both_of_torchs_wordings():
    """PyTorch 1.x logs worker_count=, 2.x num_workers_joined= (torch/distributed/distributed_c10d.py); the lines below
    are synthetic_ (built from those format strings, not a captured run)."""
    real = toolwords.judge(text(PUBLIC / "pytorch-error__store-barrier-worker-count-1-of-8.txt"))
    assert [f.verdict for f in real] == [Verdict.FAIL] and "1 of 8 ranks joined" in real[0].message
    line = ("INFO:torch.distributed.distributed_c10d:Waiting in store based barrier to initialize process group for "
            "rank: 0, key: store_based_barrier_key:1 (world_size=4, num_workers_joined={n}, timeout=0:30:00)\n")
    stuck = toolwords.judge(line.format(n=3) * 3)
    assert [f.verdict for f in stuck] == [Verdict.FAIL] and "3 of 4 ranks joined" in stuck[0].message
    assert not any(f.verdict is Verdict.FAIL for f in toolwords.judge(line.format(n=3) * 2))  # still gathering
    assert not any(f.verdict is Verdict.FAIL for f in toolwords.judge(line.format(n=2) + line.format(n=3) * 2))


def test_the_words_that_say_a_gpu_stack_cannot_work_fail():
    """Real outputs of held-out rounds 217-231: NVML's GPU-is-lost, a failed nvidia-installer step, the GPU Operator's
    driver container without kernel packages, the device plugin the kubelet refused, Apptainer --nv with no driver
    files, enroot-check's KO for GPU support, enroot's own reason under pyxis, rocminfo without the KFD, the
    kubelet rejecting a GPU pod for lack of devices, and libfabric's EFA provider failing completions to a peer."""
    cases = {"slurmd-log__slurmstepd-nvml-gpu-is-lost.txt": "GPU is lost",
             "unrecognised__gcp-v100-installer-build-kernel-modules-failed.txt": "Building kernel modules",
             "driver-container-log__centos7-could-not-resolve-kernel-version.txt": "Could not resolve Linux kernel",
             "k8s-device-plugin-log__could-not-register-unimplemented.txt": "Could not register device plugin",
             "apptainer__singularity-exec-nv-no-nv-files.txt": "Could not find any nv files",
             "enroot-check__verify-nvidia-container-cli-ko.txt": "KO (required for GPU support)",
             "pyxis__8x-a100-enroot-nsenter-userns-permission-denied.txt": "failed to create user namespace",
             "rocminfo__mi250-node-rock-module-not-live.txt": "ROCk module is NOT",
             "kubectl-describe-pod__gpu-operator-device-plugin-validator-available-0.txt": "Available: 0",
             "nccl-debug__efa-libfabric-invalid-address-peer.txt": "Invalid address",
             "unrecognised__gpud-h100-fabric-manager-not-active.txt": '"Unhealthy"'}
    for name, words in cases.items():
        fs = toolwords.judge(text(PUBLIC / name))
        assert [f.verdict for f in fs] == [Verdict.FAIL], name
        assert words in fs[0].message, (name, fs[0].message)


def test_a_device_plugin_that_registered_with_the_kubelet_and_a_healthy_gpud_component_pass():
    fs = toolwords.judge(text(PUBLIC / "k8s-device-plugin-log__microk8s-aws-registered.txt"))
    assert [f.verdict for f in fs] == [Verdict.PASS] and "Registered device plugin" in fs[0].message
    fs = toolwords.judge(text(PUBLIC / "unrecognised__gpud-gb200-fabric-manager-component-healthy.txt"))
    assert [f.verdict for f in fs] == [Verdict.PASS] and '"Healthy"' in fs[0].message


def test_torchruns_omp_banner_and_paddles_device_notes_are_not_warnings():
    """torchrun's row of stars at level WARNING around its OMP_NUM_THREADS notice (held-out round 236, real) and
    PaddlePaddle's glog W lines naming each device's compute capability and cuDNN version (round 237, real) carry no
    fault."""
    assert not [f for f in toolwords.judge(text(PUBLIC / "torchrun-log__eks-ddp-etcd-rendezvous-2-participants.txt"))
                if f.verdict is Verdict.WARN]
    assert not [f for f in toolwords.judge(text(PUBLIC / "paddle-log__v100-driver-11.2-runtime-10.1-cudnn-7.6.txt"))
                if f.verdict is Verdict.WARN]


def test_pmix_dstore_lock_noise_is_not_an_error_and_ggml_cudamalloc_oom_is_cuda_error_2():
    """PMIx's 'ERROR in file gds_ds12_lock_pthread.c' that every rank of an Open MPI 4 job prints (held-out round
    242, real, around complete nccl-tests runs) is noise; llama.cpp's 'cudaMalloc failed: out of memory' (round 245,
    real) is CUDA error 2, the program's out of memory (a warning), not a pass beside 'found 4 CUDA devices'."""
    noise = toolwords.judge("[node-73:348287] PMIX ERROR: ERROR in file gds_ds12_lock_pthread.c at line 168\n")
    assert not [f for f in noise if f.verdict in (Verdict.WARN, Verdict.FAIL)]
    fs = toolwords.judge(text(PUBLIC / "llama-server-log__4x-p100-16gb-cudamalloc-oom-compute-buffer.txt"))
    assert [f.verdict for f in fs] == [Verdict.WARN] and "cudaErrorMemoryAllocation" in fs[0].message


def test_container_runtimes_that_could_not_hand_the_gpu_over_fail_and_a_healthy_device_list_passes():
    """Held-out rounds 254 and 256 (real): podman's CDI injection of a device node that is gone, libnvidia-container's
    mknod failures in a Kata VM, MSCCL++'s ibv_reg_mr of GPU memory (errno 14) fail; HAMi's device plugin listing its
    Tesla T4 with "health":true passes."""
    cdi = explain_text(text(PUBLIC / "podman-cdi__rootless-renderD129-missing.txt"))
    assert cdi.verdict is Verdict.FAIL and "failed to inject devices" in cdi.findings[0].message
    nvc = explain_text(text(PUBLIC / "nvidia-container-cli-debug__kata-vm-mknod-device-node-failed.txt"))
    assert nvc.verdict is Verdict.FAIL and "could not create kernel module device node" in nvc.findings[0].message
    reg = explain_text(text(PUBLIC / "unrecognised__mscclpp-ibmr-gpu-ibv-reg-mr-bad-address.txt"))
    (f,) = [f for f in reg.findings if f.verdict is Verdict.FAIL]
    assert "could not register memory with the RDMA device" in f.message and "nvidia-peermem" in f.remedy
    hami = explain_text(text(PUBLIC / "hami-device-plugin-log__tesla-t4-registered-healthy.txt"))
    assert hami.verdict is Verdict.PASS
    assert explain_text('devices=[{"id":"GPU-1","type":"NVIDIA-Tesla T4","health":false}]\n').verdict is Verdict.FAIL


def test_a_missing_cuda_library_fails_a_health_checks_failed_line_fails_and_the_peer_memory_module_still_fails():
    """Held-out rounds 261-262 (real): CuPy unable to dlopen libnvrtc.so.12 fails (the program's GPU work cannot
    start); az-hop's "Node Health Checks failed ... returned 127" fails; nv_peer_mem refused by modprobe still fails
    (GPUDirect RDMA), where nvidia_fs would only warn."""
    lib = explain_text(text(PUBLIC / "cupy-error__libnvrtc-so-12-missing-brev-l4.txt"))
    assert lib.verdict is Verdict.FAIL and any("could not load the CUDA library libnvrtc.so.12" in f.message
                                              for f in lib.findings)
    nhc = explain_text(text(PUBLIC / "nhc-log__azhop-viz3d-check-nvsmi-healthmon-returned-127.txt"))
    assert nhc.verdict is Verdict.FAIL
    peer = explain_text(text(PUBLIC / "dpkg-install__nvidia-peer-memory-dkms-modprobe-unknown-symbol.txt"))
    assert peer.verdict is Verdict.FAIL and any("nv_peer_mem" in f.message for f in peer.findings)


def test_a_node_agents_xid_condition_is_judged_by_the_xid_table():
    """Held-out round 270 (real, the EKS node monitoring agent's AcceleratedHardwareReady condition): "False
    reason=NvidiaXID79Error msg=detected XID-79 ..." is Xid 79 (fell off the bus): fail."""
    r = explain_text(text(PUBLIC / "kubectl-get-node__zenn-eks-nma-accelerated-hardware-xid79.txt"))
    assert r.verdict is Verdict.FAIL and "Xid 79" in r.findings[0].message


def test_no_cuda_device_and_a_failed_dkms_build_are_the_programs_failures():
    """Held-out rounds 277 and 288 (real): NVIDIA's GPUStressTest's 'There are no available device(s) that support
    CUDA' (the CUDA samples' words) and nvidia-installer's 'ERROR: Failed to run `/usr/sbin/dkms build ...`' fail."""
    a = explain_text(text(PUBLIC / "gpustresstest__b200-gst-no-cuda-devices-driver-570.txt"))
    assert a.verdict is Verdict.FAIL and "found no GPU" in a.findings[0].message
    b = explain_text(text(PUBLIC / "nvidia-installer__aks-418-40-04-dkms-build-fail-5-3-azure.txt"))
    assert b.verdict is Verdict.FAIL and "dkms build" in b.findings[0].message


def test_fio_data_verification_failure_fails():
    """Held-out round 296 (real): fio's 'sha256: verify failed at file ... offset ...' with expected and received CRCs
    differing: the storage returned other data than was written: fail."""
    r = explain_text(text(PUBLIC / "fio__verify-sha256-failed-randwrite-32k-crc-mismatch.txt"))
    assert r.verdict is Verdict.FAIL and "verify failed at file" in r.findings[0].message


def test_nvml_that_cannot_start_fails_whichever_program_quotes_it():
    for name in ("gpustack-log__nvidia-smi-failed-to-initialize-nvml-unknown-error-worker.txt",
                 "ollama-log__rtx-4060ti-proxmox-vm-nvml-init-999-no-gpu-detected-ollama1877.txt",
                 "collect-env__8xp106-100-cant-initialize-nvml-after-gpu-lockup-vllm.txt"):
        r = explain_text(text(PUBLIC / name))
        bad = [f for f in r.findings if f.verdict is Verdict.FAIL]
        assert bad and "NVML, the driver's management library, could not start" in bad[0].message, name
        assert "daemon-reload" in bad[0].remedy
    assert "(Unknown Error)" in toolwords.chain_words(["stdout: Failed to initialize NVML: Unknown Error"])[0].message


def test_missing_dev_nvidia_files_fail_and_a_refused_cuda_image_fails():
    (c,) = toolwords.chain_words(["ls: cannot access '/dev/nvidia*': No such file or directory"])
    assert c.cause == "dev_nodes" and c.verdict is Verdict.FAIL and "nvidia-modprobe" in c.remedy
    r = explain_text(text(PUBLIC / "nvidia-docker__driver-cuda7.0-older-than-cuda7.5-image-nvidia-docker106.txt"))
    assert r.verdict is Verdict.FAIL and "unsupported CUDA version: driver 7.0 < image 7.5" in " ".join(r.findings[0].evidence)
    # a job Slurm refused at submission is the request's error: its error lines warn, they do not fail the machine
    sb = explain_text(text(PUBLIC / "sbatch__psc-bridges-gpu-partition-untyped-gres-rejected-radical-saga.txt"))
    assert sb.verdict is Verdict.WARN


def test_no_nvidia_runtime_handler_fails_with_the_containerd_remedy():
    r = explain_text(text(PUBLIC / "kubectl-get-events__gpu-operator-operands-no-runtime-nvidia-sandbox-gpu-operator2168.txt"))
    f = r.findings[0]
    assert r.verdict is Verdict.FAIL and 'no "nvidia" runtime handler' in f.message and "nvidia-ctk runtime configure" in f.remedy


def test_apt_refusing_an_install_mpich_aborting_and_the_installers_own_cause():
    for name in ("apt-install__nvidia-driver-565-unmet-dependencies.txt",
                 "apt-get__aws-dlami-nvidia-530-kernel-common-version-skew.txt",
                 "mpich-error__frontier-mi250x-nic-policy-numa-rank-not-confined.txt"):
        assert explain_text(text(PUBLIC / name)).verdict is Verdict.FAIL, name
    r = explain_text(text(PUBLIC / "nvidia-installer-log__cuda-12.5.1-runfile-abort-nvidia-drm-already-loaded.txt"))
    assert r.verdict is Verdict.FAIL and "'nvidia-drm' appears to be already loaded" in r.findings[0].message


def test_known_failures_get_their_own_remedy_and_source():
    cases = {"mpich-error__alps-gh200-gpu-support-enabled-gtl-not-linked.txt": "MPICH_GPU_SUPPORT_ENABLED=0",
             "mpich-error__frontier-mi250x-nic-policy-numa-rank-not-confined.txt": "--cpu-bind",
             "nvidia-installer-log__cuda-12.5.1-runfile-abort-nvidia-drm-already-loaded.txt": "modprobe -r nvidia_drm",
             "apt-install__nvidia-driver-565-unmet-dependencies.txt": "apt-cache policy"}
    for name, words in cases.items():
        f = explain_text(text(PUBLIC / name)).findings[0]
        assert f.verdict is Verdict.FAIL and words in f.remedy and "give bringup the machine's side" not in f.remedy, name
