"""Medians of the repeats, the table (absolute figures, ratios vs the SDK), targets, chart."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any

OURS, SDK, FASTMCP = "mcp-runtime", "sdk", "fastmcp"

# metric, label, unit, "higher"/"lower" is better
CATALOG: list[tuple[str, str, str, str]] = [
    ("import_ms", '`python -c "import X"` wall time', "ms", "lower"),
    ("spawn_init_ms", "spawn -> first initialize reply (stdio)", "ms", "lower"),
    ("rss_init_mib", "RSS after initialize", "MiB", "lower"),
    ("seq_p50_us", "stdio sequential echo p50", "us", "lower"),
    ("seq_p99_us", "stdio sequential echo p99", "us", "lower"),
    ("pipe1", "stdio echo, 1 in flight", "calls/s", "higher"),
    ("pipe16", "stdio echo, 16 in flight", "calls/s", "higher"),
    ("pipe64", "stdio echo, 64 in flight", "calls/s", "higher"),
    ("pipe64_p99_ms", "stdio echo, 64 in flight, p99", "ms", "lower"),
    ("pipe256", "stdio echo, 256 in flight", "calls/s", "higher"),
    ("batch32", "stdio batches of 32 (2 in flight)", "calls/s", "higher"),
    ("read16", "stdio resources/read 1 KiB, 16 in flight", "calls/s", "higher"),
    ("cpu_10k_s", "server CPU per 10k echo calls (64 in flight)", "s", "lower"),
    ("peak_rss_mib", "peak RSS (VmHWM) after the stdio run", "MiB", "lower"),
    ("modern_seq_p50_us", "stdio 2026-07-28 wire, sequential p50", "us", "lower"),
    ("modern_pipe64", "stdio 2026-07-28 wire, 64 in flight", "calls/s", "higher"),
    ("http_json_c1", "HTTP stateless JSON, 1 client", "calls/s", "higher"),
    ("http_json_c16", "HTTP stateless JSON, 16 clients", "calls/s", "higher"),
    ("http_json_c64", "HTTP stateless JSON, 64 clients", "calls/s", "higher"),
    ("http_sse_c1", "HTTP session + SSE, 1 client", "calls/s", "higher"),
    ("http_sse_c16", "HTTP session + SSE, 16 clients", "calls/s", "higher"),
    ("http_sse_c64", "HTTP session + SSE, 64 clients", "calls/s", "higher"),
    ("tcp_idle_kib", "memory per idle TCP connection (2,000 open)", "KiB", "lower"),
    ("ws_idle_kib", "memory per idle WebSocket connection (2,000 open)", "KiB", "lower"),
    ("shed_err_p50_us", "overload: -32010 round trip p50", "us", "lower"),
    ("shed_err_p99_us", "overload: -32010 round trip p99", "us", "lower"),
    ("shed_cpu_us", "overload, one at a time, back to back: server CPU per refusal", "us", "lower"),
    (
        "shed_cpu_idle_us",
        "overload, one at a time, each from idle: server CPU per refusal",
        "us",
        "lower",
    ),
    (
        "shed_sleeps",
        "overload, one at a time, back to back: sleeps (voluntary switches) per refusal",
        "x",
        "lower",
    ),
    (
        "shed_slices_idle",
        "overload, one at a time, each from idle: times put on a CPU per refusal",
        "x",
        "lower",
    ),
    (
        "shed_wait_idle_us",
        "overload, one at a time, each from idle: runnable, waiting for a CPU, per refusal",
        "us",
        "lower",
    ),
    ("shed_ok_p50_ms", "overload: accepted 50 ms calls, p50", "ms", "lower"),
    ("shed_ok_p99_ms", "overload: accepted 5 ms calls, 10x the cap offered, p99", "ms", "lower"),
    ("unloaded_p99_ms", "overload: the same calls at the cap, p99", "ms", "lower"),
    ("shed_cpu10x_us", "overload, 10x the cap: net server CPU per refusal", "us", "lower"),
    ("big_read1_cpu_ms", "stdio resources/read 1 MiB text: server CPU", "ms", "lower"),
    ("big_read16_cpu_ms", "stdio resources/read 16 MiB text: server CPU", "ms", "lower"),
    ("big_blob4_cpu_ms", "stdio resources/read 4 MiB blob: server CPU", "ms", "lower"),
    ("big_call1_cpu_ms", "stdio tools/call, 1 MiB argument: server CPU", "ms", "lower"),
    ("big_read1_rss_x", "read 1 MiB: peak RSS growth / payload", "x", "lower"),
    ("big_read16_rss_x", "read 16 MiB: peak RSS growth / payload", "x", "lower"),
    ("big_blob4_rss_x", "read 4 MiB blob: peak RSS growth / payload", "x", "lower"),
    ("big_call1_rss_x", "tools/call 1 MiB: peak RSS growth / payload", "x", "lower"),
    ("big_read1_step_ms", "read 1 MiB: longest event-loop step", "ms", "lower"),
    ("big_read16_step_ms", "read 16 MiB: longest event-loop step", "ms", "lower"),
    ("big_blob4_step_ms", "read 4 MiB blob: longest event-loop step", "ms", "lower"),
    ("big_call1_step_ms", "tools/call 1 MiB: longest event-loop step", "ms", "lower"),
    ("http_big_read1_cpu_ms", "HTTP resources/read 1 MiB text: server CPU", "ms", "lower"),
    ("http_big_read16_cpu_ms", "HTTP resources/read 16 MiB text: server CPU", "ms", "lower"),
    ("http_big_blob4_cpu_ms", "HTTP resources/read 4 MiB blob: server CPU", "ms", "lower"),
    ("http_big_call1_cpu_ms", "HTTP tools/call, 1 MiB argument: server CPU", "ms", "lower"),
    ("http_big_read16_step_ms", "HTTP read 16 MiB: longest event-loop step", "ms", "lower"),
    ("http_big_blob4_step_ms", "HTTP read 4 MiB blob: longest event-loop step", "ms", "lower"),
    ("http_big_call1_step_ms", "HTTP tools/call 1 MiB: longest event-loop step", "ms", "lower"),
    ("session_idle_kib", "memory per idle session with a GET stream", "KiB", "lower"),
    ("listen_idle_kib", "memory per idle 2026-07-28 listen stream", "KiB", "lower"),
    ("session_fanout_ms", "resources/updated to 1,000 sessions: last one has it", "ms", "lower"),
    ("session_fanout_cpu_ms", "resources/updated to 1,000 sessions: server CPU", "ms", "lower"),
    ("listen_fanout_ms", "resources/updated to 1,000 listens: last one has it", "ms", "lower"),
    ("listen_fanout_cpu_ms", "resources/updated to 1,000 listens: server CPU", "ms", "lower"),
]
# benchmarks/servers/floor_stdio.py for the big payloads; `python -c "import trio, msgspec"`
# for spawn_init_ms
FLOOR = "floor"
# benchmarks/servers/floor_refusal.py and .c for the refusal rows (benchmarks.run
# REFUSAL_FLOORS): contender, what it is
REFUSAL_FLOORS = [
    ("floor-bare", "bare Python loop"),
    ("floor-trio", "trio loop, one task"),
    ("floor-c", "C loop"),
]
REFUSAL_METRICS = [
    "shed_cpu_us",
    "shed_cpu_idle_us",
    "shed_sleeps",
    "shed_slices_idle",
    "shed_wait_idle_us",
]

# Issue 22: label, our metric, (reference contender, its metric), "min"/"max" ratio or "abs".
ROUND2_TARGETS: list[tuple[str, str, tuple[str, str], str, float]] = [
    (
        "HTTP modern JSON, 16 clients >= 50% of client ceiling",
        "http_json_c16",
        ("client", "ceiling_http16"),
        "min",
        0.5,
    ),
    (
        "HTTP sessions + SSE, 16 clients >= 35% of client ceiling",
        "http_sse_c16",
        ("client", "ceiling_http16"),
        "min",
        0.35,
    ),
    ("read 1 MiB CPU <= 1.3x floor", "big_read1_cpu_ms", (FLOOR, "big_read1_cpu_ms"), "max", 1.3),
    (
        "read 16 MiB CPU <= 1.3x floor",
        "big_read16_cpu_ms",
        (FLOOR, "big_read16_cpu_ms"),
        "max",
        1.3,
    ),
    (
        "read 4 MiB blob CPU <= 1.3x floor",
        "big_blob4_cpu_ms",
        (FLOOR, "big_blob4_cpu_ms"),
        "max",
        1.3,
    ),
    (
        "tools/call 1 MiB CPU <= 1.3x floor",
        "big_call1_cpu_ms",
        (FLOOR, "big_call1_cpu_ms"),
        "max",
        1.3,
    ),
    (
        "HTTP read 1 MiB CPU <= 1.3x floor",
        "http_big_read1_cpu_ms",
        (FLOOR, "http_big_read1_cpu_ms"),
        "max",
        1.3,
    ),
    (
        "HTTP read 16 MiB CPU <= 1.3x floor",
        "http_big_read16_cpu_ms",
        (FLOOR, "http_big_read16_cpu_ms"),
        "max",
        1.3,
    ),
    (
        "HTTP read 4 MiB blob CPU <= 1.3x floor",
        "http_big_blob4_cpu_ms",
        (FLOOR, "http_big_blob4_cpu_ms"),
        "max",
        1.3,
    ),
    (
        "HTTP tools/call 1 MiB CPU <= 1.3x floor",
        "http_big_call1_cpu_ms",
        (FLOOR, "http_big_call1_cpu_ms"),
        "max",
        1.3,
    ),
    ("HTTP read 16 MiB longest loop step < 20 ms", "http_big_read16_step_ms", ("", ""), "abs", 20),
    ("read 16 MiB peak RSS growth <= 3x payload", "big_read16_rss_x", ("", ""), "abs", 3.01),
    ("read 16 MiB longest loop step < 20 ms", "big_read16_step_ms", ("", ""), "abs", 20),
    ("read 4 MiB blob longest loop step < 20 ms", "big_blob4_step_ms", ("", ""), "abs", 20),
    (
        "fan-out to 1,000 listens >= 10x SDK (time)",
        "listen_fanout_ms",
        (SDK, "listen_fanout_ms"),
        "max",
        0.1,
    ),
    ("memory per idle session + GET stream < 20 KiB", "session_idle_kib", ("", ""), "abs", 20),
    ("memory per idle listen stream < 20 KiB", "listen_idle_kib", ("", ""), "abs", 20),
    ("memory per idle TCP connection < 16 KiB", "tcp_idle_kib", ("", ""), "abs", 16),
    ("memory per idle WebSocket < 24 KiB", "ws_idle_kib", ("", ""), "abs", 24),
    (
        "overload: accepted p99 <= 2x unloaded p99",
        "shed_ok_p99_ms",
        (OURS, "unloaded_p99_ms"),
        "max",
        2,
    ),
    (
        "overload: server CPU per refusal < 30 us (one at a time, back to back)",
        "shed_cpu_us",
        ("", ""),
        "abs",
        30,
    ),
    (
        "overload: server CPU per refusal < 30 us (one at a time, each from idle)",
        "shed_cpu_idle_us",
        ("", ""),
        "abs",
        30,
    ),
    (
        "overload: server CPU per refusal < 30 us (10x offered)",
        "shed_cpu10x_us",
        ("", ""),
        "abs",
        30,
    ),
    (
        "spawn -> initialize <= 1.25x `import trio, msgspec`",
        "spawn_init_ms",
        (FLOOR, "spawn_init_ms"),
        "max",
        1.25,
    ),
]
CLIENT_ROWS = [
    ("ceiling_stdio64", "load client ceiling: stdio vs `cat`, 64 in flight", "calls/s"),
    ("ceiling_http16", "load client ceiling: HTTP vs fixed-reply responder, 16 clients", "calls/s"),
    ("floor_http16_trio", "HTTP floor: trio alone answering fixed bytes, 16 clients", "calls/s"),
    ("floor_http16_layer", "HTTP floor: our HTTP layer, fixed answer, 16 clients", "calls/s"),
]

# label, our metric, the SDK metric it is compared with, "min ratio" or "max ratio" or "abs max"
TARGETS: list[tuple[str, str, str, str, float]] = [
    ("stdio 64 in flight >= 20x SDK", "pipe64", "pipe64", "min", 20),
    ("stdio sequential p50 <= 1/4 SDK", "seq_p50_us", "seq_p50_us", "max", 0.25),
    ("stdio batches of 32 >= 40x SDK pipelined (64)", "batch32", "pipe64", "min", 40),
    ("HTTP 16 clients, JSON (modern) >= 8x SDK", "http_json_c16", "http_json_c16", "min", 8),
    ("HTTP 16 clients, SSE (handshake) >= 8x SDK", "http_sse_c16", "http_sse_c16", "min", 8),
    ("spawn -> initialize reply <= 1/3 SDK", "spawn_init_ms", "spawn_init_ms", "max", 1 / 3),
    ("`import runtime` < 150 ms", "import_ms", "", "abs", 150),
    ("server CPU per 10k calls <= 1/10 SDK", "cpu_10k_s", "cpu_10k_s", "max", 0.1),
    ("RSS after initialize <= 1/2 SDK", "rss_init_mib", "rss_init_mib", "max", 0.5),
    ("memory per idle TCP connection < 50 KiB", "tcp_idle_kib", "", "abs", 50),
    ("memory per idle WebSocket connection < 50 KiB", "ws_idle_kib", "", "abs", 50),
]


def medians(
    rows: list[dict[str, Any]],
) -> tuple[dict[tuple[str, str], float], dict[tuple[str, str], str]]:
    values: dict[tuple[str, str], list[float]] = defaultdict(list)
    notes: dict[tuple[str, str], str] = {}
    for row in rows:
        key = (row["contender"], row["metric"])
        if row["value"] is not None:
            values[key].append(row["value"])
        if row.get("note"):
            notes[key] = row["note"]
    return {k: statistics.median(v) for k, v in values.items() if v}, notes


def _fmt(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value >= 1000:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3g}"


def _ratio(a: float | None, b: float | None) -> str:
    if a is None or b is None or b == 0:
        return "-"
    return f"{a / b:.3g}x"


def _cell(
    med: dict[tuple[str, str], float], notes: dict[tuple[str, str], str], c: str, m: str
) -> str:
    if (c, m) in med:
        return _fmt(med[(c, m)])
    note = notes.get((c, m), "")
    if note.startswith("not available") or note.startswith("error"):
        return "n/a*"
    return "-"


def table(rows: list[dict[str, Any]]) -> tuple[str, list[str], list[str]]:
    med, notes = medians(rows)
    lines = [
        f"| measurement | unit | better | {OURS} | SDK | fastmcp | {OURS} / SDK | fastmcp / SDK |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for metric, label, unit, better in CATALOG:
        cells = [_cell(med, notes, c, metric) for c in (OURS, SDK, FASTMCP)]
        if all(cell == "-" for cell in cells):
            continue
        lines.append(
            f"| {label} | {unit} | {better} | {' | '.join(cells)} | "
            f"{_ratio(med.get((OURS, metric)), med.get((SDK, metric)))} | "
            f"{_ratio(med.get((FASTMCP, metric)), med.get((SDK, metric)))} |"
        )
    for metric, label, unit, _ in CATALOG:
        if (FLOOR, metric) in med:
            lines.append(
                f"| floor: {label} | {unit} | lower | {_fmt(med[(FLOOR, metric)])} | | | "
                f"ours {_ratio(med.get((OURS, metric)), med[(FLOOR, metric)])} | |"
            )
    labels = {metric: (label, unit) for metric, label, unit, _ in CATALOG}
    for metric in REFUSAL_METRICS:
        label, unit = labels[metric]
        for contender, what in REFUSAL_FLOORS:
            if (contender, metric) in med:
                lines.append(
                    f"| floor ({what}): {label} | {unit} | lower | "
                    f"{_fmt(med[(contender, metric)])} | | | "
                    f"ours {_ratio(med.get((OURS, metric)), med[(contender, metric)])} | |"
                )
    ceiling = med.get(("client", "ceiling_http16"))
    for metric, label, unit in CLIENT_ROWS:
        if ("client", metric) in med:
            share = (
                f"{_ratio(med[('client', metric)], ceiling)} ceiling"
                if metric.startswith("floor_http") and ceiling
                else ""
            )
            lines.append(
                f"| {label} | {unit} | higher | {_fmt(med[('client', metric)])} | | | {share} | |"
            )
    if ("python", "import_ms") in med:
        lines.append(
            "| `python -c pass` (interpreter alone) | ms | lower | "
            f"{_fmt(med[('python', 'import_ms')])} | | | | |"
        )
    target_lines = ["| target | figure | met? |", "| --- | --- | --- |"]
    for label, ours_m, sdk_m, kind, bound in TARGETS:
        a = med.get((OURS, ours_m))
        if kind == "abs":
            shown = f"{_fmt(a)}" if a is not None else "n/a"
            met = "n/a" if a is None else ("yes" if a < bound else "**no**")
        else:
            b = med.get((SDK, sdk_m))
            if a is None or not b:
                why = (
                    notes.get((OURS, ours_m))
                    if a is None
                    else notes.get((SDK, sdk_m), "SDK figure missing")
                )
                shown, met = "n/a", f"n/a ({why})" if why else "n/a"
            else:
                ratio = a / b
                shown = f"{ratio:.3g}x ({_fmt(a)} vs {_fmt(b)})"
                ok = ratio >= bound if kind == "min" else ratio <= bound
                met = "yes" if ok else "**no**"
        target_lines.append(f"| {label} | {shown} | {met} |")
    target_lines += [
        "",
        "Targets:",
        "",
        "| target | figure | met? |",
        "| --- | --- | --- |",
    ]
    for label, ours_m, ref, kind, bound in ROUND2_TARGETS:
        shown, met = _round2(med, notes, ours_m, ref, kind, bound)
        target_lines.append(f"| {label} | {shown} | {met} |")
    footnotes = []
    seen = set()
    for (c, m), note in sorted(notes.items()):
        failed = note.startswith("not available") or note.startswith("error")
        if ((failed and (c, m) not in med) or "batch of 32" in note) and (c, note) not in seen:
            seen.add((c, note))
            footnotes.append(f"- {c} `{m}`: {note}")
    return "\n".join(lines), target_lines, footnotes


def _round2(
    med: dict[tuple[str, str], float],
    notes: dict[tuple[str, str], str],
    ours_m: str,
    ref: tuple[str, str],
    kind: str,
    bound: float,
) -> tuple[str, str]:
    a = med.get((OURS, ours_m))
    if a is None:
        return "n/a", f"n/a ({notes.get((OURS, ours_m), 'not measured')})"
    if kind == "abs":
        return _fmt(a), "yes" if a < bound else "**no**"
    b = med.get(ref)
    if not b:
        return "n/a", f"n/a ({notes.get(ref, 'reference not measured')})"
    ratio = a / b
    ok = ratio >= bound if kind == "min" else ratio <= bound
    return f"{ratio:.3g}x ({_fmt(a)} vs {_fmt(b)})", "yes" if ok else "**no**"


def draw_chart(rows: list[dict[str, Any]], path: Path, title: str) -> bool:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed (pip install -e '.[bench]'): no chart")
        return False
    med, _ = medians(rows)
    rates = [m for m, _, unit, _ in CATALOG if unit == "calls/s"]
    rates = [m for m in rates if any((c, m) in med for c in (OURS, SDK, FASTMCP))]
    labels = {m: label for m, label, _, _ in CATALOG}
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(15, 6.5), gridspec_kw={"width_ratios": [3, 2]})
    width = 0.27
    colors = {OURS: "#2a7ab0", SDK: "#999999", FASTMCP: "#e08a2c"}
    for i, c in enumerate((OURS, SDK, FASTMCP)):
        xs = [j + (i - 1) * width for j in range(len(rates))]
        ys = [med.get((c, m), 0) for m in rates]
        ax1.bar(xs, ys, width, label=c, color=colors[c])
    ax1.set_yscale("log")
    ax1.set_xticks(range(len(rates)))
    ax1.set_xticklabels(
        [labels[m].replace("stdio ", "stdio\n").replace("HTTP ", "HTTP\n") for m in rates],
        rotation=60,
        ha="right",
        fontsize=7,
    )
    ax1.set_ylabel("calls/s (log scale, higher is better)")
    ax1.set_title("throughput (median of repeats; missing bar = not available)")
    ax1.legend()
    ax1.grid(axis="y", alpha=0.3)
    # Right: our figure / SDK's, against the target, as "times better" on a log scale.
    names, achieved, wanted = [], [], []
    for label, ours_m, sdk_m, kind, bound in TARGETS:
        if kind == "abs":
            continue
        a, b = med.get((OURS, ours_m)), med.get((SDK, sdk_m))
        if a is None or not b:
            continue
        better = a / b if kind == "min" else b / a
        names.append(label.split(" >=")[0].split(" <=")[0])
        achieved.append(better)
        wanted.append(bound if kind == "min" else 1 / bound)
    for label, ours_m, ref, kind, bound in ROUND2_TARGETS:
        a, b = med.get((OURS, ours_m)), med.get(ref)
        if kind == "abs" or a is None or not b:
            continue
        names.append(label.split(" >=")[0].split(" <=")[0])
        achieved.append(a / b if kind == "min" else b / a)
        wanted.append(bound if kind == "min" else 1 / bound)
    rows_y = list(range(len(names)))
    ax2.barh(rows_y, achieved, color=colors[OURS], label="achieved (x better than SDK)")
    ax2.scatter(wanted, rows_y, marker="|", s=400, color="red", label="target", zorder=3)
    ax2.set_xscale("log")
    ax2.axvline(1, color="black", lw=0.8)
    ax2.set_yticks(rows_y)
    ax2.set_yticklabels(names, fontsize=8)
    ax2.set_title("mcp-runtime vs SDK, floor or ceiling (x better), red = target")
    # below the bars, where it can hide no bar or target mark
    ax2.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08), ncol=2, frameon=False)
    ax2.grid(axis="x", alpha=0.3)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


def render(
    rows: list[dict[str, Any]],
    results: Path,
    mode: str,
    *,
    chart: bool = True,
    elapsed: float = 0.0,
) -> None:
    main, targets, footnotes = table(rows)
    repeats = 1 + max((r["repeat"] for r in rows), default=0)
    text = [
        f"Median of {repeats} repeats ({mode} run, {elapsed:.0f} s). "
        "Ratios are against the official SDK.",
        "",
        main,
        "",
        "Targets (against the peers, then against floors and ceilings):",
        "",
        *targets,
        "",
    ]
    if footnotes:
        text += ["Notes:", "", *footnotes, ""]
    out = "\n".join(text)
    print("\n" + out)
    (results / f"table-{mode}.md").write_text(out)
    if chart:
        png = results / f"chart-{mode}.png"
        if draw_chart(rows, png, f"MCP servers on stdio and Streamable HTTP ({mode} run)"):
            print(f"chart: {png}")
