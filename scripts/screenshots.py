"""Regenerates ``screenshots/``: the whole TUI while the MNIST Net really trains (a child process
streaming over the socket, as ``modscope demo`` runs it), one screenshot per view, and the Net's
autograd graph rendered by graphviz. SVG from Textual, PNG through ``rsvg-convert`` (Debian's
``librsvg2-bin``).

    .venv/bin/python scripts/screenshots.py
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "screenshots"
sys.path.insert(0, str(ROOT))

from modscope.views.tui.app import ModscopeApp  # noqa: E402
from modscope.views.tui.sources import ChildProcess, SocketSource  # noqa: E402

SIZE = (200, 55)
VIEWS = {"tree": "#tree", "params": "#params", "timeline": "#timeline", "training": "#training", "graph": "#graph"}


def to_png(svg: Path) -> Path:
    """Textual writes spaces as &#160;, which rsvg collapses at the start of a styled span; plain
    spaces under xml:space="preserve" render as the terminal shows them."""
    text = svg.read_text().replace("&#160;", " ").replace("<svg ", '<svg xml:space="preserve" ', 1)
    fixed = svg.with_suffix(".render.svg")
    fixed.write_text(text)
    png = svg.with_suffix(".png")
    subprocess.run(["rsvg-convert", str(fixed), "-o", str(png)], check=True)
    fixed.unlink()
    return png


async def capture() -> list[Path]:
    written: list[Path] = []
    source = SocketSource()
    script = ROOT / "examples" / "mnist_net.py"
    child = ChildProcess(source, str(script), ["--epochs", "100"], None, stats=True)
    app = ModscopeApp(source, child=child)
    async with app.run_test(size=SIZE) as pilot:
        for _ in range(600):
            await pilot.pause(0.1)
            if app.state.step >= 40 and app.state.graph is not None:
                break
        print(f"captured at step {app.state.step} ({app.state.events_total} events)", file=sys.stderr)
        app._select("conv2")
        await pilot.pause(1.0)
        written.append(save(app, "tui-training"))
        for name, selector in VIEWS.items():
            widgets = app.query(selector)
            if not widgets:
                continue
            app.screen.maximize(widgets.first())
            await pilot.pause(0.5)
            written.append(save(app, f"view-{name}"))
            app.screen.minimize()
        await pilot.press("q")
        for _ in range(100):
            await pilot.pause(0.1)
            if child.returncode is not None:
                break
    return written


def save(app: ModscopeApp, name: str) -> Path:
    svg = OUT / f"{name}.svg"
    app.save_screenshot(filename=svg.name, path=str(OUT))
    return to_png(svg)


def diagram() -> Path:
    png = OUT / "autograd-net.png"
    subprocess.run([str(Path(sys.executable).parent / "modscope"), "export", "net", "--what", "autograd",
                    "--depth", "1", "-o", str(png)], check=True)
    return png


def main() -> None:
    if shutil.which("rsvg-convert") is None:
        sys.exit("rsvg-convert is missing: apt-get install librsvg2-bin")
    OUT.mkdir(exist_ok=True)
    paths = asyncio.run(capture()) + [diagram()]
    for path in paths:
        print(f"wrote {path.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
