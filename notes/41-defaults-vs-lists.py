"""Defaults against their single lists, with and without a doc_ids filter, through the MCP tools (HR@5, MRR@5).

Usage: HF_HUB_OFFLINE=1 PYTHONPATH=. nice python notes/41-defaults-vs-lists.py STORE SQUAD.json N
"""
import random, sys
from pathlib import Path
import anyio
from mcp.client import Client
from granrag_mcp.engine import Engine
from granrag_mcp.settings import Settings
from granrag_mcp.server.app import build_server
from granrag_mcp.evaluation.qa import load_squad

store, squad, n = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
qs = load_squad(squad).questions
random.Random(7).shuffle(qs)
qs = qs[:n]
settings = Settings(store=store)
engine = Engine(settings, load_reranker_now=True)
server = build_server(settings, lambda _: engine)
BM = lambda lv: {lv + "_lexical": 1.0, **{f"{o}_{t}": 0.0 for o in ("broad", "mid", "narrow") for t in ("dense", "lexical") if (o, t) != (lv, "lexical")}}
DN = lambda lv: {lv + "_dense": 1.0, **{f"{o}_{t}": 0.0 for o in ("broad", "mid", "narrow") for t in ("dense", "lexical") if (o, t) != (lv, "dense")}}
METHODS = {
  "mid": {
    "search_narrow level=mid (default, adapted)": ("search_narrow", {"level": "mid"}),
    "search_fused level=mid (default)": ("search_fused", {"level": "mid"}),
    "dense only (search_narrow level=mid lexical=false)": ("search_narrow", {"level": "mid", "lexical": False}),
    "BM25 only (search_fused level=mid, other lists 0)": ("search_fused", {"level": "mid", "weights": BM("mid")}),
  },
  "broad": {
    "hrr_search (default)": ("hrr_search", {}),
    "search_fused level=broad (default)": ("search_fused", {"level": "broad"}),
    "dense only (search_broad lexical=false)": ("search_broad", {"lexical": False}),
    "BM25 only (search_fused level=broad, other lists 0)": ("search_fused", {"level": "broad", "weights": BM("broad")}),
  },
}
rows = {}
async def main():
    async with Client(server) as client:
        for scope in ("across documents", "within the document (doc_ids)"):
            for level, methods in METHODS.items():
                for name, (tool, args) in methods.items():
                    hr = mrr = 0.0; errors = 0
                    for q in qs:
                        a = {"query": q.question, "k": 5, "max_tokens": 100000, **args}
                        if scope.startswith("within"):
                            a["doc_ids"] = [q.doc_id]
                        r = await client.call_tool(tool, a)
                        if r.is_error:
                            errors += 1
                            if errors == 1: print("ERR", tool, " ".join(getattr(c, "text", "") for c in r.content)[:300])
                            continue
                        for rank, h in enumerate(r.structured_content["hits"][:5], 1):
                            if h["doc_id"] == q.doc_id and h["start"] <= q.answer_start < h["end"]:
                                hr += 1; mrr += 1 / rank; break
                    print(f"{scope:32s} {level:6s} HR@5 {hr/len(qs):.3f} MRR@5 {mrr/len(qs):.3f} err {errors}  {name}", flush=True)
anyio.run(main)
