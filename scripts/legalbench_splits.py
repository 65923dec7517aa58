"""LangChain's RecursiveCharacterTextSplitter with LegalBench-RAG's baseline settings
(legalbenchrag/methods/baseline.py): prints each text's chunk lengths in characters as JSON lines,
{"file", "size", "lengths"}, for arbor's splitter (datasets/src/recursive_split.rs) to be checked against.

    python3 scripts/legalbench_splits.py SIZE FILE...   (needs langchain-text-splitters, in a venv)
"""
import json
import sys

from langchain_text_splitters import RecursiveCharacterTextSplitter

SEPARATORS = ["\n\n", "\n", "!", "?", ".", ":", ";", ",", " ", ""]


def lengths(text, size):
    splitter = RecursiveCharacterTextSplitter(separators=SEPARATORS, chunk_size=size, chunk_overlap=0,
                                              length_function=len, is_separator_regex=False, strip_whitespace=False)
    pieces = splitter.split_text(text)
    assert "".join(pieces) == text
    return [len(p) for p in pieces]


if __name__ == "__main__":
    size = int(sys.argv[1])
    for path in sys.argv[2:]:
        with open(path, encoding="utf-8") as f:
            text = f.read()
        print(json.dumps({"file": path, "size": size, "lengths": lengths(text, size)}))
