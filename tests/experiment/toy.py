"""The toy experiment the layer's tests share: a Poisson UDP flow over one link, the link rate
the treatment, the flow's loss ratio the metric."""

import tomllib

import pyarrow.parquet as pq

from qoelab.scenario import Scenario

TOY = """
[sim]
duration = "0.05s"
seed = 1
[[links]]
a = "A"
b = "B"
rate = "1Gbps"
delay = "5ms"
queue = { kind = "fifo", limit = "20p" }
[[flows]]
name = "p"
src = "A"
dst = "B"
transport = { kind = "udp" }
app = { kind = "poisson", rate = "900Mbps", payload = "1000B" }
"""


def build(p):
    sc = Scenario.from_dict(tomllib.loads(TOY), "toy.toml")
    sc.set("links[0].rate", p["rate"])
    return sc


def metrics(run_dir, p):
    t = pq.read_table(run_dir / "flows.parquet").to_pylist()
    (row,) = [r for r in t if r["flow"] == "p"] if "flow" in t[0] else t
    return {"loss": float(row["loss_ratio"])}
