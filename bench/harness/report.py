"""The markdown summary: one table per workload, each broker's figures and Silo's ratios to the others."""

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
        rows = [r for r in results if r["workload"] == wl]
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
