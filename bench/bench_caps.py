"""A 50 MB chat reply from a server that ignores max_tokens: what the client keeps and holds.

For SSE and for one plain JSON body, with the chat's max_tokens (512) and without (the
client's 1,000,000-character cap): characters kept, time, peak bytes allocated during the call
(tracemalloc) and the process's max RSS before and after. The scripted server generates the
reply as it sends it, so the figures are the client's.

    .venv/bin/python -m bench.bench_caps
"""

from __future__ import annotations

import resource
import sys
import time
import tracemalloc
from pathlib import Path

REPLY_BYTES = 50 * 1024 * 1024


def main() -> int:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from nocturne_desktop.llm.client import OpenAIClient
    from tests.fakeserver import FakeLLM, Reply

    print(f"A {REPLY_BYTES // (1024 * 1024)} MB reply; the server ignores max_tokens\n")
    print("| body | max_tokens | kept | cut | time | peak allocated | max RSS before → after |")
    print("| --- | ---: | ---: | --- | ---: | ---: | ---: |")
    with FakeLLM() as server:
        client = OpenAIClient(server.base_url, "fake-model")
        client.chat([{"role": "user", "content": "warm up"}])
        for body in ("SSE", "JSON"):
            for max_tokens in (512, None):
                rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                server.script(Reply.huge(REPLY_BYTES, ignore_stream=(body == "JSON")))
                tracemalloc.start()
                t0 = time.perf_counter()
                result = client.chat([{"role": "user", "content": "hi"}], max_tokens=max_tokens)
                took = time.perf_counter() - t0
                peak = tracemalloc.get_traced_memory()[1]
                tracemalloc.stop()
                rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                print(f"| {body} | {max_tokens or 'none'} | {len(result.text):,} chars | "
                      f"{result.cut} | {took:.2f} s | {peak / 1e6:.2f} MB | "
                      f"{rss0 / 1024:.0f} → {rss1 / 1024:.0f} MB |")
        client.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
