"""Print how long sentence splitting takes on 100 kB and 1 MB of prose, in paragraphs and as one
paragraph without a blank line, and the growth from one size to the other (linear is 10x).

    python benchmarks/split_speed.py [--sizes 100000 1000000]

CPU seconds of `serc_dspy.core.text.split_sentences`. Not part of the test run: the test
suite bounds only the growth ratio (tests/chaos/test_text_layer_faults.py), never a time.
"""

from __future__ import annotations

import argparse
import time

from serc_dspy.core.text import split_sentences

PROSE = (
    "Marie Curie was born in Warsaw on 7 November 1867. Her father, Władysław Skłodowski, "
    "taught mathematics and physics. In 1891 she moved to Paris, where she studied at the "
    "Sorbonne! Was the work dangerous? Dr. Henri Becquerel had found that uranium salts "
    "emitted rays (about 3.5 times weaker than later samples, e.g. from pitchblende). "
    "She married Pierre Curie in 1895; together they isolated polonium and radium. "
    "\"It was like a dream,\" she said. The couple shared the 1903 Nobel Prize in Physics "
    "with Becquerel. After Pierre died in 1906, Mrs. Curie took over his chair at the "
    "Faculty of Sciences. She won a second Nobel Prize, in Chemistry, in 1911. During the "
    "war she ran mobile X-ray units, the \"petites Curies\". She died on 4 July 1934 at the "
    "Sancellemoz sanatorium in Passy, Haute-Savoie. "
)


def cpu_seconds(text: str) -> tuple[float, int]:
    start = time.process_time()
    sentences = split_sentences(text)
    return time.process_time() - start, len(sentences)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 1_000_000],
                        help="text sizes in characters")
    args = parser.parse_args()
    for shape, unit in (("paragraphs", PROSE + "\n\n"), ("one paragraph", PROSE)):
        first = None
        for size in args.sizes:
            text = unit * max(1, size // len(unit))
            seconds, count = cpu_seconds(text)
            growth = f", {seconds / first:.1f}x the first size" if first else ""
            first = first or seconds
            print(f"{shape:>13}: {len(text):>9,} characters, {count:>6,} sentences, "
                  f"{seconds:6.2f} s CPU{growth}")


if __name__ == "__main__":
    main()
