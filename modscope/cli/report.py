"""``modscope report TRACE [--compare B] -o run.html``: a trace as one self-contained HTML file
(``views.html.page``): opens offline, can be attached to an issue.

Exit status: 0 written; 2 bad input (a missing or damaged trace, either one: one line on stderr
naming the file); 1 when the output cannot be written.
"""

from __future__ import annotations

import argparse
import sys

from .failure import fail


def add_command(subcommands: argparse._SubParsersAction) -> None:
    """Register ``report``."""
    p = subcommands.add_parser(
        "report", help="write a trace as one self-contained HTML page (opens offline)",
        description="Write a recorded trace as one self-contained HTML file: the module tree (collapsible, "
                    "searchable), the summary table, plots of metrics, learning rates and per-module gradient "
                    "norms, parameters and buffers per step, the hook firing order per step, the autograd graph "
                    "with a cluster per module, and with --compare the diff against a second trace. Long runs "
                    "are sampled to keep the file small, and the page says so.",
        epilog="Exit status: 0 written, 1 the output cannot be written, 2 bad input (missing or damaged trace).")
    p.add_argument("trace", metavar="TRACE", help="the trace file (.jsonl or .jsonl.gz)")
    p.add_argument("--compare", metavar="B", help="a second trace: add the diff of TRACE against it")
    p.add_argument("-o", "--output", metavar="FILE", required=True, help="the HTML file to write")
    p.set_defaults(run=_run)


def _run(args: argparse.Namespace) -> int:
    from ..events.files import TraceFileError
    from ..views.html.page import write_report

    try:
        report = write_report(args.trace, args.output, compare=args.compare)
    except (TraceFileError, OSError) as e:  # a damaged trace, or an output path that cannot be written
        return fail("report", str(e))
    for note in report.notes:
        print(f"modscope report: note: {note}", file=sys.stderr)
    for warning in report.warnings:
        print(f"modscope report: warning: {warning}", file=sys.stderr)
    size = report.size
    print(f"wrote {args.output} ({size / 1e6:.1f} MB)" if size >= 1e5 else f"wrote {args.output} ({size:,} bytes)",
          file=sys.stderr)
    return 0
