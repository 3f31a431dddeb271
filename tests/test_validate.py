"""wizard/validate.py: the human lines of a validation log and the live progress line."""

from __future__ import annotations

import json

from wizard.validate import LiveView, event_line


def _ev(**data) -> str:
    return "BRINGUP " + json.dumps({"v": 1, "t": 1.0, "node": "vm", **data})


def test_a_soak_interval_is_said_once_in_seconds():
    """walk 20: each soak interval came twice (once per rank, no rank named) as "[3/120] soak interval 2", which read
    as interval 3 of 120; the figures are seconds. Rank 0's line says it, in seconds."""
    line = {"event": "progress", "test": "soak", "phase": "soak interval 2", "done": 3, "total": 120, "unit": "s"}
    assert event_line(_ev(rank=0, **line)) == "[3 s of 120 s] soak interval 2"
    assert event_line(_ev(rank=1, **line)) is None
    old = {k: v for k, v in line.items() if k != "unit"}  # a script before the unit: counted as before
    assert event_line(_ev(rank=0, **old)) == "[3/120] soak interval 2"
    live = LiveView()
    live.add(0, [_ev(rank=0, **line)])
    assert "(3 s of 120 s)" in live.progress_line()


def test_the_progress_line_before_the_first_progress_event_says_what_runs_in_words():
    """Walk 23 #11: a burn-in's line began as a bare "▶ counters" (the counters event has no test); it names the
    run's test, what it does and the node, as the later phases' lines do."""
    from wizard import i18n

    live = LiveView()
    live.add(0, [_ev(event="start", test="soak", device="cpu", world_size=1),
                 _ev(event="counters", when="before", device=None, available=False)])
    assert live.progress_line() == "\u25b6 soak: reading the error counters before the test on vm"
    assert live.progress_line(basic=True).startswith("> soak: ")
    live.add(2, [_ev(event="counters", when="after", device=None, available=False)])
    assert live.progress_line() == "\u25b6 soak: reading the error counters after the test on vm"
    i18n.set_language("zh_CN")
    try:
        assert "正在读取测试后的错误计数" in live.progress_line()
    finally:
        i18n.set_language("en")


def test_a_multinode_runs_own_words_are_in_chinese_the_machines_as_they_are():
    """walk 24 #9: the multi-node run's "n1 (localhost) unreachable: ssh to localhost failed: ..." and its progress
    phases ("[0/2] copy the script to 2 node(s)", "facts from 0 node(s)") stayed English on a Chinese screen. Its log
    keeps English (a run's record); the lines shown are in the operator's language, ssh's message as ssh printed it."""
    import json

    from wizard import i18n
    from wizard.hosts import ssh_failed_words
    from wizard.validate import event_line, phase_words

    why = "ssh: connect to host localhost port 22: Connection refused"
    err = {"event": "error", "test": "multinode", "kind": "unreachable", "node": "n1", "target": "localhost",
           "error": f"ssh to localhost failed: {why}",
           "message": f"n1 (localhost) unreachable: ssh to localhost failed: {why}"}
    line = "BRINGUP " + json.dumps(err)
    progress = "BRINGUP " + json.dumps({"event": "progress", "test": "multinode", "done": 0, "total": 2,
                                        "phase": "copy the script to 2 node(s)"})
    # walk 46 #2e: the test's name in words ("multinode 出错" in a Chinese line)
    assert event_line(line) == f"error in the multi-node run: n1 (localhost) unreachable: ssh to localhost failed: {why}"
    # walk 25 #10: the kind is said once, in words, and only where the message does not say it already
    hung = "BRINGUP " + json.dumps({"event": "error", "test": "allreduce", "kind": "hang", "message": "no progress for 300 s"})
    assert event_line(hung) == "error in all-reduce: hung: no progress for 300 s"
    i18n.set_language("zh_CN")
    try:
        shown, prog, hung_zh = event_line(line), event_line(progress), event_line(hung)
        facts = [phase_words("facts from 0 node(s)"), phase_words("facts from n1")]
        none_said = i18n.tr(ssh_failed_words("ssh to n2 failed: exit status 255 and no message"))
    finally:
        i18n.set_language("en")
    assert shown == f"多节点运行出错：n1（localhost）无法连接：ssh 连接 localhost 失败：{why}"
    assert hung_zh == "all-reduce 出错：挂起：no progress for 300 s"
    live = LiveView()
    live.add(0, [_ev(event="start", test="multinode", device="cpu", world_size=2), line[len("BRINGUP "):] and line])
    assert live.progress_line().endswith(f"; 1 error: n1 (localhost) unreachable: ssh to localhost failed: {why}")
    assert live.errors()[0][2].startswith("n1 (localhost) unreachable")
    assert prog == "[0/2] 将脚本复制到 2 个节点"
    assert facts == ["读取 0 个节点的信息", "读取 n1 的信息"]
    assert none_said == "ssh 连接 n2 失败：退出状态 255，没有任何消息"
    assert ssh_failed_words("could not copy") == "could not copy"


def test_the_one_gpu_measures_are_labelled_in_the_operators_language():
    """walk 24 #10: a Chinese gpu.validate log said "gemm: 0.157 TFLOPS" and "memcpy: 28.2 GB/s" in English beside
    "内存：0 个模式错误". The labels are the field's Chinese terms, the figures and units as the script wrote them."""
    import json

    from wizard import i18n
    from wizard.validate import event_line

    def measure(test, value, unit, device=None):
        return "BRINGUP " + json.dumps({"event": "measure", "test": test, "value": value, "unit": unit,
                                        **({"device": device} if device is not None else {})})

    lines = [measure("gemm", 0.157, "TFLOPS"), measure("memcpy", 28.2, "GB/s"), measure("memcpy", 1500, "GB/s", 1),
             measure("h2d", 25, "GB/s", 0), measure("d2h", 26, "GB/s", 0), measure("gemm", 700, "TFLOPS", 0)]
    assert [event_line(x) for x in lines] == ["gemm: 0.157 TFLOPS", "memcpy: 28.2 GB/s", "memcpy GPU 1: 1.5e+03 GB/s",
                                              "h2d GPU 0: 25 GB/s", "d2h GPU 0: 26 GB/s", "gemm GPU 0: 700 TFLOPS"]
    i18n.set_language("zh_CN")
    try:
        zh = [event_line(x) for x in lines]
    finally:
        i18n.set_language("en")
    assert zh == ["GEMM 矩阵乘：0.157 TFLOPS", "内存拷贝：28.2 GB/s", "显存拷贝 GPU 1：1.5e+03 GB/s",
                  "主机→设备拷贝 GPU 0：25 GB/s", "设备→主机拷贝 GPU 0：26 GB/s", "GEMM 矩阵乘 GPU 0：700 TFLOPS"]


def test_the_soak_is_not_called_the_burn_in_in_chinese():
    """Walk 28 #7: the soak's progress read "老化第 1 段" (老化 is the burn-in's word, gpu.stress, a separate step with
    its own result) and its error "浸泡测试出错". One term per test: the soak is 持续负载测试, the burn-in 老化测试.
    (validate burnin without DCGM runs the validation script's soak test, the same sustained GEMM, so it says
    "持续负载" too: what runs, not 老化.)"""
    from wizard import i18n
    line = {"event": "progress", "test": "soak", "phase": "soak interval 1", "done": 1, "total": 60, "unit": "s"}
    i18n.set_language("zh_CN")
    try:
        shown = event_line(_ev(rank=0, **line))
        err = i18n._("soak error")
        soak_help = i18n._("run a validation (one GPU, the node, a soak, a burn-in, several nodes) and judge it")
    finally:
        i18n.set_language("en")
    assert shown == "[1 秒 / 共 60 秒] 持续负载第 1 段"
    assert err == "持续负载测试出错"
    assert "持续负载测试、老化测试" in soak_help
    po = (__import__("pathlib").Path(__file__).parent.parent / "assets/locale/zh_CN/LC_MESSAGES/bringup.po").read_text()
    assert "浸泡" not in po and "老化第" not in po


def test_a_sub_test_starting_has_a_space_after_kaishi_only_before_latin_text():
    """Walk 28 #17: "开始 内存拷贝（cpu）（2/6）" had a space between two Chinese words; "开始 GEMM 矩阵乘（cpu）" keeps its."""
    from wizard import i18n

    mem = {"event": "progress", "test": "cpu", "phase": "memcpy on cpu", "done": 1, "total": 6, "index": 2}
    gemm = {**mem, "phase": "gemm on cpu", "index": 1}
    assert event_line(_ev(rank=0, **mem)) == "starting memcpy on cpu (2/6)"
    i18n.set_language("zh_CN")
    try:
        shown_mem, shown_gemm = event_line(_ev(rank=0, **mem)), event_line(_ev(rank=0, **gemm))
    finally:
        i18n.set_language("en")
    assert shown_mem is not None and shown_mem.startswith("开始") and not shown_mem.startswith("开始 "), shown_mem
    assert shown_mem.endswith("（2/6）") and shown_gemm is not None and shown_gemm.startswith("开始 GEMM"), shown_gemm


def test_a_sub_test_that_measured_nothing_says_so():
    """walk 30 #11: on the CPU, "starting h2d (3/6)" was followed by nothing (the script skips host-device copies
    without a CUDA device): its result line says it was not measured, and why, in the reader's language."""
    from wizard import i18n

    line = _ev(rank=0, event="result", test="h2d", ok=True, device=None,
               summary={"skipped": "no CUDA device", "device": None})
    assert event_line(line) == "h2d: not measured here (no CUDA device)"
    i18n.set_language("zh_CN")
    try:
        zh = event_line(line)
    finally:
        i18n.set_language("en")
    assert zh is not None and "no CUDA device" not in zh
    assert event_line(_ev(rank=0, event="result", test="gemm", ok=True, summary={"tflops": 1.0})) is None


def test_a_run_that_ended_in_under_a_second_does_not_say_zero_seconds():
    """walk 36 #11: a facts-only multi-node run that reached no node ended "测试在 0 s 后结束", as if it had not run;
    under half a second it says "in under a second", longer runs their whole seconds."""
    from wizard import i18n

    def ended(duration_s):
        live = LiveView()
        live.add(0, [_ev(event="start", test="multinode", device="cpu", world_size=2),
                     _ev(event="end", test="multinode", status=1, duration_s=duration_s)])
        return live.progress_line()

    assert ended(0.04).startswith("tests finished in under a second") and " 0 s" not in ended(0.04)
    assert ended(12.4).startswith("tests finished after 12 s")
    i18n.set_language("zh_CN")
    try:
        assert ended(0.04).startswith("测试不到 1 秒即结束")
    finally:
        i18n.set_language("en")


def test_a_measured_value_is_shown_one_way_with_its_unit_in_the_readers_words():
    """Walk 39: "1 bool" as a measured value, "0.000233 比值" with a ratio as its unit; and "rank 1 on vm" in a Chinese
    results table. One function shows a value for the results table, the measurements and `bringup validate`."""
    from screens.validation_view import stored_rows
    from wizard import i18n
    from wizard.validate import value_shown

    assert [value_shown(1.0, "bool"), value_shown(0.0, "bool"), value_shown(0.000233, "ratio"), value_shown(3, "count"),
            value_shown(None, "GB/s"), value_shown(0.856, "GB/s")] == ["yes", "no", "0.000233", "3", "-", "0.856 GB/s"]
    i18n.set_language("zh_CN")
    try:
        assert value_shown(2, "ranks") == "2 个进程" and value_shown(1, "bool") == "是"
        row = stored_rows({"results": [{"test": "soak", "subject": "rank 1 on vm", "metric": "m", "value": 1,
                                         "unit": "ratio", "verdict": "pass"}]})[0]
        assert row[1] == "rank 1（vm）" and row[3] == "1"
    finally:
        i18n.set_language("en")
