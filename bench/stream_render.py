"""Streaming into the chat: 20,000 tokens at ~1,000 tokens/s, through the real path.

The fake LLM server (tests/fakes), in a process of its own as a provider would be, streams an
OpenAI-wire answer of TOKENS chunks of 4 characters (~1 token each) with 1 ms between chunks;
the app's helper process (hermes_tui/llm_host.py) parses it with LiteLLM, and the turn's worker
thread hands the parsed text to the app, which feeds Markdown
widgets through Textual's MarkdownStream: a long answer continues in a new widget every
~SPLIT_CHARS characters (hermes_tui/tui/splitter.py), and widgets far above the view fold (keep
their height, drop their block widgets: hermes_tui/tui/answer.py). The app runs headless inside
``run_test`` at 120x40. Two runs in one process: first with splitting off (one widget per answer,
so nothing can fold: the baseline), then as shipped; the ratio of the worst key echoes is printed
last.

Figures:
* last-token latency: from the moment the worker thread receives the last text delta (it hands
  it to the app's inbox) until a Markdown block on screen (mounted, its rendered content) holds
  that text; polled every millisecond on the app's event loop. Budget 100 ms.
* key echo while streaming: a key is posted to the app every 150 ms, as the terminal driver
  would; the latency runs until the prompt's text shows it. Budget 50 ms (worst case).
Also: the garbage collections (hermes_tui/tui/collector.py) while the answer streamed and after
the turn, stream duration, effective tokens/s, how busy the app's thread was, how many inbox
batches the deltas arrived in, and for context the rate LiteLLM alone parses the same stream at
(no app, in this process). On two cores the server, the helper and the app share the CPU.
Prints figures, never fails on a time.

    python bench/stream_render.py [--tokens 20000] [--delay 0.001] [--nested]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import _common
from _common import ServerProcess, percentile
from textual import events

from tests.fakes.server import Reply

SENTINEL = "the-last-token-zq"
KEY_INTERVAL = 0.15
CHUNK = 4  # characters per streamed chunk: about one token


def markdown_text(tokens: int, nested: bool = False) -> str:
    """Varied markdown (paragraphs, lists, code) of about ``tokens`` 4-character chunks; with
    ``nested``, nested lists and tables instead of flat lists and code (more widgets per line).

    Every word differs: LiteLLM aborts a stream whose chunks repeat ("the model is repeating").
    """
    parts: list[str] = []
    size = 0
    n = 0
    while size < (tokens - 10) * CHUNK:
        section = n % 4
        if section == 0:
            text = f"## Part {n}\n\n" + " ".join(f"word{n}x{i}" for i in range(60)) + "\n\n"
        elif section == 1 and nested:
            text = "".join(f"- item {n}.{i} with *detail{i}*\n  - sub {n}.{i}.a `code{n}{i}`\n  - sub {n}.{i}.b\n"
                           for i in range(4)) + "\n"
        elif section == 1:
            text = "".join(f"- item {n}.{i} with *detail{i}* and `code{n}{i}`\n" for i in range(8)) + "\n"
        elif section == 2 and nested:
            text = "| name | value | note |\n|---|---|---|\n" + "".join(
                f"| row{n}x{i} | {i * n} | note {n}.{i} |\n" for i in range(6)) + "\n"
        elif section == 2:
            text = "```python\n" + "".join(f"value_{n}_{i} = compute({i}, {n})\n" for i in range(6)) + "```\n\n"
        else:
            text = " ".join(f"**bold{n}y{i}** plain{i}" for i in range(25)) + "\n\n"
        parts.append(text)
        size += len(text)
        n += 1
    parts.append(f"The end: {SENTINEL}.")
    return "".join(parts)


def last_block_text(markdown: Any) -> str:
    """The text the Markdown widget's last block renders, once mounted (``_content`` is Textual's
    private field for a block's rendered content; good enough for a benchmark)."""
    blocks = [child for child in markdown.children if child.is_mounted]
    return blocks[-1]._content.plain if blocks else ""


async def scenario(app: Any, pilot: Any, text: str, tokens: int) -> dict[str, Any]:
    from hermes_tui.events import TextDelta

    inbox = app.chat.inbox
    arrivals: list[float] = []
    tail = ""  # the end of the text received so far: the sentinel spans several deltas
    batches = 0
    put, take = inbox.put, inbox.take

    def timed_put(event: Any) -> None:
        nonlocal tail
        if isinstance(event, TextDelta):
            arrivals.append(time.perf_counter())
            tail = (tail + event.text)[-2 * len(SENTINEL):]
        put(event)

    def counted_take() -> list[Any]:
        nonlocal batches
        batches += 1
        return take()

    inbox.put, inbox.take = timed_put, counted_take
    cpu_start = time.thread_time()  # the app's thread: this coroutine runs on its event loop
    app.chat.prompt.load("write the long report")
    await pilot.press("enter")
    app.chat.prompt.load("")

    echoes: list[float] = []
    letters = "abcdefghijklmnopqrstuvwxyz"
    last_key = time.perf_counter()
    typed = ""
    while SENTINEL not in tail:
        now = time.perf_counter()
        if arrivals and now - last_key >= KEY_INTERVAL:
            letter = letters[len(typed) % len(letters)]
            typed += letter
            last_key = now
            app.post_message(events.Key(letter, letter))
            while not app.chat.prompt.text.endswith(typed):
                await asyncio.sleep(0.0005)
            echoes.append(time.perf_counter() - now)
        await asyncio.sleep(0.002)
    last_arrival = arrivals[-1]
    cpu = time.thread_time() - cpu_start
    while SENTINEL not in last_block_text(list(app.chat.query(".answer"))[-1]):
        await asyncio.sleep(0.001)
    shown = time.perf_counter()
    while app.chat.busy:
        await asyncio.sleep(0.01)
    from hermes_tui.tui import collector

    await asyncio.sleep(collector.QUIET + 1.0)  # the collection after the turn, once keys stop (collector.py)
    answers = list(app.chat.query(".answer"))
    return {
        "last_token_ms": (shown - last_arrival) * 1000,
        "echo_ms": [e * 1000 for e in echoes],
        "stream_s": arrivals[-1] - arrivals[0],
        "deltas": len(arrivals),
        "batches": batches,
        "tokens": tokens,
        "complete": "".join(a.source for a in answers) == text,
        "widgets": len(answers),
        "app_cpu": cpu / (arrivals[-1] - arrivals[0]),
        "window": (arrivals[0], arrivals[-1]),
    }


class Collections:
    """Every garbage collection in this process while it runs: (generation, start, seconds)."""

    def __init__(self) -> None:
        self.seen: list[tuple[int, float, float]] = []
        self._started = 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.seen.append((info["generation"], self._started, time.perf_counter() - self._started))

    def report(self, window: tuple[float, float]) -> None:
        during = [(g, d * 1000) for g, t, d in self.seen if window[0] <= t <= window[1]]
        after = [d * 1000 for g, t, d in self.seen if t > window[1] and g > 0]
        for label, generations in (("youngest", (0,)), ("older", (1, 2))):
            times = [d for g, d in during if g in generations]
            print(f"  garbage collections while streaming, {label} generation: {len(times)}"
                  + (f", median {statistics.median(times):.1f} ms, worst {max(times):.1f} ms" if times else ""))
        print("  collection of the older generations after the turn: "
              + (", ".join(f"{d:.0f} ms" for d in after) if after else "none"))


def parser_ceiling() -> float:
    """Deltas per second LiteLLM alone delivers for the same kind of stream (no app at all)."""
    from hermes_tui.config import Config
    from hermes_tui.events import TextDelta
    from hermes_tui.llm import LLMClient

    times = [time.perf_counter() for item in LLMClient(Config.load()).stream([{"role": "user", "content": "x"}])
             if isinstance(item, TextDelta)]
    return (len(times) - 1) / (times[-1] - times[0])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tokens", type=int, default=20_000, help="chunks of ~1 token to stream (default 20000)")
    parser.add_argument("--delay", type=float, default=0.001,
                        help="seconds between chunks (default 0.001: ~1,000 tokens/s; providers send 50-200)")
    parser.add_argument("--nested", action="store_true",
                        help="nested lists and tables instead of flat lists and code blocks")
    args = parser.parse_args()
    from hermes_tui.tui import splitter

    split = splitter.SPLIT_CHARS
    results = {}
    for label, limit in (("one widget per answer (baseline)", 10**12), (f"split every ~{split:,} characters", split)):
        splitter.SPLIT_CHARS = limit
        results[label] = measure(args.tokens, args.delay, args.nested)
    worst = {label: max(r["echo_ms"]) if r["echo_ms"] else float("nan") for label, r in results.items()}
    base, new = worst.values()
    print(f"worst key echo: split {new:.1f} ms vs baseline {base:.1f} ms = {new / base:.2f}x")


def measure(tokens: int, delay: float = 0.001, nested: bool = False) -> dict[str, Any]:
    text = markdown_text(tokens, nested)

    replies = (Reply(text=markdown_text(3000), chunk_size=CHUNK, chunk_delay=0.001),  # parser_ceiling
               Reply(text=text, chunk_size=CHUNK, chunk_delay=delay), Reply(text="summary"))
    with tempfile.TemporaryDirectory() as tmp, ServerProcess(*replies) as server:
        _common.isolated_env(Path(tmp) / "home", Path(tmp), server.openai_base)
        from hermes_tui import llm
        from hermes_tui.config import Config
        from hermes_tui.tui.app import build_app

        llm.warm().join()  # the litellm import is not part of this measurement
        ceiling = parser_ceiling()
        app = build_app(Config.load())
        result: dict[str, Any] = {}
        collections = Collections()
        gc.callbacks.append(collections)

        async def run() -> None:
            async with app.run_test(size=(120, 40)) as pilot:
                await pilot.pause()
                while app.markdown_loading is None or app.markdown_loading.is_alive():
                    await asyncio.sleep(0.05)  # nor is the warm-up after the first frame (app.load_markdown)
                result.update(await scenario(app, pilot, text, tokens))

        asyncio.run(run())
        gc.callbacks.remove(collections)
        app.stores.close()

    echo = result["echo_ms"]
    label = "one widget per answer" if splitter_limit() > len(text) else f"split every ~{splitter_limit():,} chars"
    print(f"[{label}] {result['widgets']} Markdown widget(s)")
    print(f"Streamed {result['deltas']:,} text deltas ({len(text):,} characters, ~{result['tokens']:,} tokens) "
          f"in {result['stream_s']:.1f} s = {result['deltas'] / result['stream_s']:,.0f} deltas/s; "
          f"the app took them in {result['batches']:,} inbox batches; final text complete: {result['complete']}")
    print(f"  (LiteLLM alone, no app, parses this stream at {ceiling:,.0f} deltas/s on this machine)")
    print(f"  app thread busy {result['app_cpu']:.0%} of the stream's duration")
    print(f"  last token on screen after it arrived: {result['last_token_ms']:.1f} ms   (budget 100 ms)")
    if echo:
        print(f"  key echo while streaming ({len(echo)} keys): median {statistics.median(echo):.1f} ms, "
              f"p95 {percentile(echo, 95):.1f} ms, worst {max(echo):.1f} ms   (budget 50 ms)")
    collections.report(result["window"])
    return result


def splitter_limit() -> int:
    from hermes_tui.tui import splitter

    return splitter.SPLIT_CHARS


if __name__ == "__main__":
    main()
