"""The markdown summary: one table per workload, each broker's figures and Silo's ratios to the others;
rows at fixed offered rates (--rates) get a table of their own per workload, one row per broker and rate.
Timer workloads and filtered catch-ups have tables with columns of their own."""

from . import brokers
from .workloads import BY_NAME

MiB = 1024 * 1024


def _num(v, digits=0):
    if v is None:
        return "–"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:,.{digits}f}"


def _ms(us):
    return "–" if us is None else f"{us / 1000:.3g}"


def _mib(b):
    return "–" if not b else f"{b / MiB:,.0f}"


def _ratio(a, b):
    if a is None or b is None or b == 0:
        return "–"
    r = a / b
    # Two decimals, or two significant digits for ratios that would round to 0.0x.
    return f"{r:.2f}×" if abs(r) >= 0.095 or r == 0 else f"{r:.2g}×"


def _figures(r):
    lat = r.get("latency_us") or {}
    res = r.get("resources") or {}
    return {
        "rate": r.get("msgs_per_sec"),
        "mb": r.get("mb_per_sec"),
        "p50": lat.get("p50"),
        "p99": lat.get("p99"),
        "avg": lat.get("avg"),
        "max": lat.get("max"),
        "idle": (res.get("idle_rss_bytes") or {}).get("total"),
        "peak": (res.get("peak_rss_bytes") or {}).get("total"),
        "anon": (res.get("peak_rss_anon_bytes_sampled") or {}).get("total"),
        "file": (res.get("peak_rss_file_bytes_sampled") or {}).get("total"),
        "cpu": (res.get("cpu_secs") or {}).get("total"),
        "cpu_msg": res.get("cpu_us_per_msg"),
    }


HEADER = ("| Broker | Generator | msgs/s | MB/s | p50 ms | p99 ms | avg ms | max ms | idle RSS MiB | peak RSS MiB "
          "| peak file MiB | peak anon MiB | CPU s | CPU µs/msg | errors | load |")
RULE = "|" + "---|" * 16

# What the memory columns are, under every table that has them.
MEMORY_NOTE = ("peak RSS: VmHWM, the most the processes ever had resident, file pages included. Of it, peak file: "
               "mapped file pages (the store's segments, a JVM's jars), page cache the kernel drops and reads again "
               "as it needs; peak anon: the processes' own memory (heap, buffers, stacks). Both sampled every 0.2 s.")


def markdown(results, workload_names, what):
    out = []
    for wl in workload_names:
        rated = [r for r in results if r["workload"] == wl and r.get("offered_rate") is not None]
        rows = [r for r in results if r["workload"] == wl and r.get("offered_rate") is None]
        if rated:
            out.extend(_rated_table(wl, rated, what))
        if not rows:
            continue
        special = _special_columns(wl, rows)
        if special:
            out.extend(_columns_table(wl, rows, what, special))
            continue
        out.append(f"### {wl}\n")
        if what.get(wl):
            out.append(f"{what[wl]}.\n")
        out.append(HEADER)
        out.append(RULE)
        for r in rows:
            label = brokers.LABELS.get(r["broker"], r["broker"])
            if r.get("status") != "ok":
                out.append(f"| {label} | {r['generator']} | {r.get('status')}: {r.get('error', '')} |" + " |" * 13)
                continue
            f = _figures(r)
            load = _num((r.get("loadavg_at_start") or [None])[0], 1)
            out.append(f"| {label} | {r['generator']} | {_num(f['rate'])} | {_num(f['mb'], 1)} | {_ms(f['p50'])} "
                       f"| {_ms(f['p99'])} | {_ms(f['avg'])} | {_ms(f['max'])} | {_mib(f['idle'])} | {_mib(f['peak'])} "
                       f"| {_mib(f['file'])} | {_mib(f['anon'])} | {_num(f['cpu'], 1)} | {_num(f['cpu_msg'], 1)} | {_num(r.get('errors'))} | {load} |")
        for gen in sorted({r["generator"] for r in rows}):
            ok = {r["broker"]: _figures(r) for r in rows if r["generator"] == gen and r.get("status") == "ok"}
            silo = ok.get(brokers.SILO)
            if not silo:
                continue
            for other in (brokers.APACHE, brokers.RUST, brokers.NULL):
                o = ok.get(other)
                if not o:
                    continue
                out.append(f"| Silo / {brokers.LABELS[other]} | {gen} | {_ratio(silo['rate'], o['rate'])} "
                           f"| {_ratio(silo['mb'], o['mb'])} | {_ratio(silo['p50'], o['p50'])} "
                           f"| {_ratio(silo['p99'], o['p99'])} | {_ratio(silo['avg'], o['avg'])} "
                           f"| {_ratio(silo['max'], o['max'])} | {_ratio(silo['idle'], o['idle'])} "
                           f"| {_ratio(silo['peak'], o['peak'])} | {_ratio(silo['file'], o['file'])} "
                           f"| {_ratio(silo['anon'], o['anon'])} "
                           f"| {_ratio(silo['cpu'], o['cpu'])} "
                           f"| {_ratio(silo['cpu_msg'], o['cpu_msg'])} | | |")
        out.append("")
        out.append(MEMORY_NOTE + "\n")
        out.extend(_replication_table(wl, rows))
    return "\n".join(out)


def _replication_table(wl, rows):
    """For master/slave pairs: how far behind the slave was while the workload ran, sampled every
    0.1 s from the master's GET_BROKER_HA_STATUS (bytes not confirmed, and how long ago the
    master's log reached what the slave had confirmed)."""
    pairs = [r for r in rows if r.get("status") == "ok" and r.get("replication_lag")]
    if not pairs:
        return []
    out = [f"Replication lag during {wl} (sampled every 0.1 s on the master):\n",
           "| Broker | Generator | msgs/s | p99 ms | behind p50 KiB | behind p99 KiB | behind max KiB "
           "| lag p50 ms | lag p99 ms | lag max ms | samples |",
           "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in pairs:
        f, lag = _figures(r), r["replication_lag"]
        label = brokers.LABELS.get(r["broker"], r["broker"])
        out.append(f"| {label} | {r['generator']} | {_num(f['rate'])} | {_ms(f['p99'])} "
                   f"| {_num(lag['bytes_p50'] / 1024, 1)} | {_num(lag['bytes_p99'] / 1024, 1)} "
                   f"| {_num(lag['bytes_max'] / 1024, 1)} | {_num(lag['ms_p50'], 1)} | {_num(lag['ms_p99'], 1)} "
                   f"| {_num(lag['ms_max'], 1)} | {lag['samples']} |")
    out.append("")
    return out


def _rated_figures(r):
    rate = r.get("rate") or {}
    res = r.get("resources") or {}
    e2e = r.get("produce_latency_us") is not None
    send = (r.get("produce_latency_us") if e2e else r.get("latency_us")) or {}
    end = (r.get("latency_us") if e2e else None) or {}
    lag = rate.get("schedule_lag_us") or {}
    return {
        "achieved": rate.get("achieved_msgs_per_sec"),
        "send_p50": send.get("p50"), "send_p99": send.get("p99"), "send_p999": send.get("p999"),
        "send_max": send.get("max"),
        "e2e_p50": end.get("p50"), "e2e_p99": end.get("p99"), "e2e_p999": end.get("p999"), "e2e_max": end.get("max"),
        "lag_p99": lag.get("p99"),
        "anon": (res.get("peak_rss_anon_bytes_sampled") or {}).get("total"),
        "cpu": (res.get("cpu_secs") or {}).get("total"),
        "cpu_msg": res.get("cpu_us_per_msg"),
    }


def _rated_table(wl, rows, what):
    """Rows at fixed offered rates: offered and achieved rate, whether it was sustained, and the
    latencies counted from each send's intended time."""
    e2e = any(r.get("produce_latency_us") is not None for r in rows)
    lat = ["send p50 ms", "send p99 ms", "send p99.9 ms", "send max ms"]
    keys = ["send_p50", "send_p99", "send_p999", "send_max"]
    if e2e:
        lat += ["e2e p50 ms", "e2e p99 ms", "e2e p99.9 ms", "e2e max ms"]
        keys += ["e2e_p50", "e2e_p99", "e2e_p999", "e2e_max"]
    cols = (["Broker", "Generator", "offered msgs/s", "achieved msgs/s", "sustained"] + lat
            + ["lag p99 ms", "peak anon MiB", "CPU s", "CPU µs/msg", "errors", "load"])
    out = [f"### {wl} at fixed offered rates\n"]
    if what.get(wl):
        out.append(f"{what[wl]}; open loop: sends fall due at the offered rate and latencies count from each "
                   "send's intended time; sustained = achieved >= 99% of offered, schedule lag p99 <= 10 ms, "
                   "no send left unsent.\n")
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "---|" * len(cols))
    order = {b: i for i, b in enumerate(brokers.ALL)}
    rows = sorted(rows, key=lambda r: (r["offered_rate"], order.get(r["broker"], 99)))
    for rate in sorted({r["offered_rate"] for r in rows}):
        at = [r for r in rows if r["offered_rate"] == rate]
        for r in at:
            label = brokers.LABELS.get(r["broker"], r["broker"])
            if r.get("status") != "ok":
                out.append(f"| {label} | {r['generator']} | {_num(rate)} | {r.get('status')}: {r.get('error', '')} |"
                           + " |" * (len(cols) - 4))
                continue
            f = _rated_figures(r)
            sustained = (r.get("rate") or {}).get("sustained")
            load = _num((r.get("loadavg_at_start") or [None])[0], 1)
            out.append(f"| {label} | {r['generator']} | {_num(rate)} | {_num(f['achieved'])} "
                       f"| {'yes' if sustained else 'no' if sustained is not None else '–'} | "
                       + " | ".join(_ms(f[k]) for k in keys)
                       + f" | {_ms(f['lag_p99'])} | {_mib(f['anon'])} | {_num(f['cpu'], 1)} | {_num(f['cpu_msg'], 1)} "
                       f"| {_num(r.get('errors'))} | {load} |")
        ok = {r["broker"]: _rated_figures(r) for r in at if r.get("status") == "ok"}
        silo = ok.get(brokers.SILO)
        for other in (brokers.APACHE, brokers.RUST, brokers.NULL):
            o = ok.get(other)
            if not silo or not o:
                continue
            out.append(f"| Silo / {brokers.LABELS[other]} | | {_num(rate)} | {_ratio(silo['achieved'], o['achieved'])} | | "
                       + " | ".join(_ratio(silo[k], o[k]) for k in keys)
                       + f" | {_ratio(silo['lag_p99'], o['lag_p99'])} | {_ratio(silo['anon'], o['anon'])} "
                       f"| {_ratio(silo['cpu'], o['cpu'])} | {_ratio(silo['cpu_msg'], o['cpu_msg'])} | | |")
    out.append("")
    return out


# --- workloads with columns of their own ----------------------------------------------------------
#
# A column: (header, figure of a result or None, format, whether a Silo / other ratio makes sense).

def _get(r, *path):
    for k in path:
        if not isinstance(r, dict):
            return None
        r = r.get(k)
    return r


def _signed_ms(us):
    return "–" if us is None else f"{us / 1000:,.1f}"


def _consume_cpu(r):
    """The broker's CPU seconds over the catch-up: silo bench's own reading (/proc at its start and
    end, exact for a run of well under a second), else the harness's sampled one."""
    cpu = _get(r, "bench_broker", "cpu_seconds")
    return cpu if cpu is not None else _get(r, "resources", "cpu_secs", "total")


def _cpu_per_scanned(r):
    cpu, scanned = _consume_cpu(r), _get(r, "filter", "scanned_msgs")
    return 1e6 * cpu / scanned if cpu is not None and scanned else None


def _pct(v):
    return "–" if v is None else f"{100 * v:.1f} %"


FILTER_COLUMNS = [
    ("subscription", lambda r: f"{_get(r, 'filter', 'expression_type')} `{_get(r, 'filter', 'expression')}`"
     if _get(r, "filter") else None, str, False),
    ("backlog", lambda r: _get(r, "filter", "backlog_msgs"), _num, False),
    ("matched", lambda r: r.get("msgs"), _num, False),
    ("matched share", lambda r: _get(r, "filter", "matched_share"), _pct, False),
    ("matched msgs/s", lambda r: r.get("msgs_per_sec"), _num, True),
    ("scanned msgs/s", lambda r: _get(r, "filter", "scanned_msgs_per_sec"), _num, True),
    ("pull p50 ms", lambda r: _get(r, "latency_us", "p50"), _ms, True),
    ("pull p99 ms", lambda r: _get(r, "latency_us", "p99"), _ms, True),
    ("peak anon MiB", lambda r: _get(r, "resources", "peak_rss_anon_bytes_sampled", "total"), _mib, True),
    ("CPU s", _consume_cpu, lambda v: _num(v, 2), True),
    ("CPU µs/scanned msg", _cpu_per_scanned, lambda v: _num(v, 2), True),
]

TIMER_COLUMNS = [
    ("timers sent", lambda r: _get(r, "send", "msgs"), _num, False),
    ("send msgs/s", lambda r: _get(r, "send", "msgs_per_sec"), _num, True),
    ("acked after due", lambda r: _get(r, "send", "acked_after_due"), _num, False),
    ("lateness min ms", lambda r: _get(r, "lateness_us", "min"), _signed_ms, False),
    ("p50 ms", lambda r: _get(r, "lateness_us", "p50"), _signed_ms, True),
    ("p99 ms", lambda r: _get(r, "lateness_us", "p99"), _signed_ms, True),
    ("p99.9 ms", lambda r: _get(r, "lateness_us", "p999"), _signed_ms, True),
    ("max ms", lambda r: _get(r, "lateness_us", "max"), _signed_ms, True),
    ("early", lambda r: r.get("early_msgs"), _num, False),
    ("> 1 s late", lambda r: r.get("late_over_1s_msgs"), _num, False),
    ("missing", lambda r: r.get("missing_msgs"), _num, False),
    ("duplicates", lambda r: r.get("duplicate_msgs"), _num, False),
    ("peak anon MiB", lambda r: _get(r, "resources", "peak_rss_anon_bytes_sampled", "total"), _mib, True),
    ("CPU s", lambda r: _get(r, "resources", "cpu_secs", "total"), lambda v: _num(v, 1), True),
]

PENDING_COLUMNS = [
    ("pending timers", lambda r: r.get("msgs"), _num, False),
    ("send msgs/s", lambda r: r.get("msgs_per_sec"), _num, True),
    ("send p99 ms", lambda r: _get(r, "send", "latency_us", "p99"), _ms, True),
    ("RSS before MiB", lambda r: _get(r, "send", "broker", "rss_start_bytes"), _mib, True),
    ("idle RSS MiB", lambda r: _get(r, "idle", "broker", "rss_end_bytes"), _mib, True),
    ("idle peak RSS MiB", lambda r: _get(r, "idle", "broker", "rss_peak_bytes"), _mib, True),
    ("anon before MiB", lambda r: _get(r, "send", "broker", "anon_start_bytes"), _mib, True),
    ("idle anon MiB", lambda r: _get(r, "idle", "broker", "anon_end_bytes"), _mib, True),
    ("idle peak anon MiB", lambda r: _get(r, "idle", "broker", "anon_peak_bytes"), _mib, True),
    ("CPU % before", lambda r: _get(r, "baseline", "cpu_percent"), lambda v: _num(v, 1), True),
    ("idle CPU s", lambda r: _get(r, "idle", "broker", "cpu_seconds"), lambda v: _num(v, 2), True),
    ("idle CPU %", lambda r: _get(r, "idle", "cpu_percent"), lambda v: _num(v, 1), True),
]

COLUMNS_BY_KIND = {"timers": TIMER_COLUMNS, "timers-pending": PENDING_COLUMNS}


def _special_columns(wl, rows):
    w = BY_NAME.get(wl)
    if w is None:
        return None
    if w.filter:
        return FILTER_COLUMNS
    return COLUMNS_BY_KIND.get(w.kind)


def _columns_table(wl, rows, what, columns):
    out = [f"### {wl}\n"]
    if what.get(wl):
        out.append(f"{what[wl]}.\n")
    heads = ["Broker", "Generator"] + [c[0] for c in columns] + ["errors", "load"]
    out.append("| " + " | ".join(heads) + " |")
    out.append("|" + "---|" * len(heads))
    for r in rows:
        label = brokers.LABELS.get(r["broker"], r["broker"])
        if r.get("status") != "ok":
            out.append(f"| {label} | {r['generator']} | {r.get('status')}: {r.get('error', '')} |"
                       + " |" * (len(heads) - 3))
            continue
        cells = []
        for _, get, fmt, _ in columns:
            v = get(r)
            cells.append("–" if v is None else fmt(v))
        load = _num((r.get("loadavg_at_start") or [None])[0], 1)
        out.append(f"| {label} | {r['generator']} | " + " | ".join(cells) + f" | {_num(r.get('errors'))} | {load} |")
    for gen in sorted({r["generator"] for r in rows}):
        ok = {r["broker"]: r for r in rows if r["generator"] == gen and r.get("status") == "ok"}
        silo = ok.get(brokers.SILO)
        if not silo:
            continue
        for other in (brokers.APACHE, brokers.RUST):
            o = ok.get(other)
            if not o:
                continue
            cells = [_ratio(get(silo), get(o)) if ratio else "" for _, get, _, ratio in columns]
            out.append(f"| Silo / {brokers.LABELS[other]} | {gen} | " + " | ".join(cells) + " | | |")
    out.append("")
    return out
