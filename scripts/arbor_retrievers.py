"""LlamaIndex and LangChain retrievers over `arbor serve` (issue 86).

    arbor serve INDEX                      # listening on http://127.0.0.1:8700

    from arbor_retrievers import ArborLlamaIndexRetriever, ArborLangChainRetriever
    nodes = ArborLlamaIndexRetriever("http://127.0.0.1:8700", k=5).retrieve("What causes fever?")
    docs = ArborLangChainRetriever(url="http://127.0.0.1:8700", k=5).invoke("What causes fever?")

Each returns what `arbor query --json` returns for the same question, method, k, documents and token
budget, in the framework's own types: LlamaIndex `NodeWithScore`s of `TextNode`s, LangChain `Document`s;
the text handed on is the node's text or the document's page content; the score, the document key, the
rank and the spans (`[start, end)` in characters and in UTF-8 bytes) are in the metadata. Either
framework is imported only when its retriever is used (`pip install llama-index-core` or
`pip install langchain-core`); `ArborClient` alone needs the standard library.
"""

import json
import urllib.error
import urllib.request
from typing import Any, Dict, List, Optional

__all__ = ["ArborClient", "ArborLlamaIndexRetriever", "ArborLangChainRetriever", "metadata_of"]


class ArborClient:
    """`POST /query` on an `arbor serve` at `url`; an error answer raises with the server's reason."""

    def __init__(self, url: str, k: int = 5, method: Optional[str] = None, docs: Optional[List[str]] = None,
                 max_tokens: Optional[int] = None, timeout: float = 60.0):
        self.url, self.k, self.method, self.docs, self.max_tokens, self.timeout = url.rstrip("/"), k, method, docs, max_tokens, timeout

    def query(self, question: str) -> Dict[str, Any]:
        body: Dict[str, Any] = {"query": question, "k": self.k}
        if self.method:
            body["method"] = self.method
        if self.docs:
            body["doc"] = list(self.docs)
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        request = urllib.request.Request(self.url + "/query", data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read())
        except urllib.error.HTTPError as e:
            reason = e.read().decode(errors="replace")
            try:
                reason = json.loads(reason)["error"]
            except (ValueError, KeyError):
                pass
            raise RuntimeError(f"arbor serve answered {e.code}: {reason}") from None


def metadata_of(result: Dict[str, Any]) -> Dict[str, Any]:
    """What a result carries besides its text."""
    meta = {"document": result["document"], "rank": result["rank"], "score": result["score"], "spans": result["spans"]}
    for extra in ("node", "layer"):
        if extra in result:
            meta[extra] = result[extra]
    return meta


def _llama_index_retriever():
    from llama_index.core.retrievers import BaseRetriever
    from llama_index.core.schema import NodeWithScore, QueryBundle, TextNode

    class ArborLlamaIndexRetriever(BaseRetriever):
        """A LlamaIndex retriever answering from `arbor serve`."""

        def __init__(self, url: str, k: int = 5, method: Optional[str] = None, docs: Optional[List[str]] = None,
                     max_tokens: Optional[int] = None, **kwargs: Any):
            super().__init__(**kwargs)
            self._client = ArborClient(url, k, method, docs, max_tokens)

        def _retrieve(self, query_bundle: QueryBundle) -> List[NodeWithScore]:
            answer = self._client.query(query_bundle.query_str)
            nodes = []
            for r in answer["results"]:
                first = r["spans"][0]["chars"] if r["spans"] else [0, 0]
                node = TextNode(text=r["text"], id_=f"{r['document']}#{first[0]}-{first[1]}", metadata=metadata_of(r))
                nodes.append(NodeWithScore(node=node, score=r["score"]))
            return nodes

    return ArborLlamaIndexRetriever


def _langchain_retriever():
    from langchain_core.callbacks import CallbackManagerForRetrieverRun
    from langchain_core.documents import Document
    from langchain_core.retrievers import BaseRetriever

    class ArborLangChainRetriever(BaseRetriever):
        """A LangChain retriever answering from `arbor serve`."""

        url: str
        k: int = 5
        method: Optional[str] = None
        docs: Optional[List[str]] = None
        max_tokens: Optional[int] = None

        def _get_relevant_documents(self, query: str, *, run_manager: CallbackManagerForRetrieverRun) -> List[Document]:
            answer = ArborClient(self.url, self.k, self.method, self.docs, self.max_tokens).query(query)
            return [Document(page_content=r["text"], metadata=metadata_of(r)) for r in answer["results"]]

    return ArborLangChainRetriever


def __getattr__(name: str):
    # The framework is imported when its retriever is first asked for.
    if name == "ArborLlamaIndexRetriever":
        return _llama_index_retriever()
    if name == "ArborLangChainRetriever":
        return _langchain_retriever()
    raise AttributeError(name)
