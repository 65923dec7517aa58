#!/usr/bin/env python3
"""Reads a run's TensorBoard event files with TensorBoard's own EventAccumulator and prints every scalar
tag with its number of points and last value: proof that TensorBoard reads what arbor writes.

    python3 -m pip install tensorboard
    python3 scripts/read_tensorboard.py runs/quickstart/<timestamp>/tb
"""
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator


def main():
    acc = EventAccumulator(sys.argv[1])
    acc.Reload()
    tags = acc.Tags()["scalars"]
    if not tags:
        sys.exit("no scalars found")
    for tag in sorted(tags):
        events = acc.Scalars(tag)
        print(f"{tag:24} {len(events):5d} points, last step {events[-1].step}, last value {events[-1].value:.4f}")


if __name__ == "__main__":
    main()
