"""The markdown summary: one table per workload, each broker's figures and Silo's ratios to the others;
rows at fixed offered rates (--rates) get a table of their own per workload, one row per broker and rate."""

from . import brokers

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
    return f"{a / b:.2f}×"


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
        "cpu": (res.get("cpu_secs") or {}).get("total"),
        "cpu_msg": res.get("cpu_us_per_msg"),
    }


HEADER = ("| Broker | Generator | msgs/s | MB/s | p50 ms | p99 ms | avg ms | max ms | idle RSS MiB | peak RSS MiB "
          "| peak anon MiB | CPU s | CPU µs/msg | errors | load |")
RULE = "|" + "---|" * 15


def markdown(results, workload_names, what):
    out = []
    for wl in workload_names:
        rated = [r for r in results if r["workload"] == wl and r.get("offered_rate") is not None]
        rows = [r for r in results if r["workload"] == wl and r.get("offered_rate") is None]
        if rated:
            out.extend(_rated_table(wl, rated, what))
        if not rows:
            continue
        out.append(f"### {wl}\n")
        if what.get(wl):
            out.append(f"{what[wl]}.\n")
        out.append(HEADER)
        out.append(RULE)
        for r in rows:
            label = brokers.LABELS.get(r["broker"], r["broker"])
            if r.get("status") != "ok":
                out.append(f"| {label} | {r['generator']} | {r.get('status')}: {r.get('error', '')} |" + " |" * 12)
                continue
            f = _figures(r)
            load = _num((r.get("loadavg_at_start") or [None])[0], 1)
            out.append(f"| {label} | {r['generator']} | {_num(f['rate'])} | {_num(f['mb'], 1)} | {_ms(f['p50'])} "
                       f"| {_ms(f['p99'])} | {_ms(f['avg'])} | {_ms(f['max'])} | {_mib(f['idle'])} | {_mib(f['peak'])} "
                       f"| {_mib(f['anon'])} | {_num(f['cpu'], 1)} | {_num(f['cpu_msg'], 1)} | {_num(r.get('errors'))} | {load} |")
        for gen in sorted({r["generator"] for r in rows}):
            ok = {r["broker"]: _figures(r) for r in rows if r["generator"] == gen and r.get("status") == "ok"}
            silo = ok.get(brokers.SILO)
            if not silo:
                continue
            for other in (brokers.APACHE, brokers.RUST):
                o = ok.get(other)
                if not o:
                    continue
                out.append(f"| Silo / {brokers.LABELS[other]} | {gen} | {_ratio(silo['rate'], o['rate'])} "
                           f"| {_ratio(silo['mb'], o['mb'])} | {_ratio(silo['p50'], o['p50'])} "
                           f"| {_ratio(silo['p99'], o['p99'])} | {_ratio(silo['avg'], o['avg'])} "
                           f"| {_ratio(silo['max'], o['max'])} | {_ratio(silo['idle'], o['idle'])} "
                           f"| {_ratio(silo['peak'], o['peak'])} | {_ratio(silo['anon'], o['anon'])} "
                           f"| {_ratio(silo['cpu'], o['cpu'])} "
                           f"| {_ratio(silo['cpu_msg'], o['cpu_msg'])} | | |")
        out.append("")
    return "\n".join(out)


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
        for other in (brokers.APACHE, brokers.RUST):
            o = ok.get(other)
            if not silo or not o:
                continue
            out.append(f"| Silo / {brokers.LABELS[other]} | | {_num(rate)} | {_ratio(silo['achieved'], o['achieved'])} | | "
                       + " | ".join(_ratio(silo[k], o[k]) for k in keys)
                       + f" | {_ratio(silo['lag_p99'], o['lag_p99'])} | {_ratio(silo['anon'], o['anon'])} "
                       f"| {_ratio(silo['cpu'], o['cpu'])} | {_ratio(silo['cpu_msg'], o['cpu_msg'])} | | |")
    out.append("")
    return out
