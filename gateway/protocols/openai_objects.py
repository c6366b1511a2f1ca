"""What the OpenAI API stores per account, as object routes (``Owned``), and the routes known
to store nothing (``Declaration.stateless``): the default upstream's, declared once by the
Responses protocol (the default upstream's first), read wherever that upstream is relayed.

With the operator's key every tenant's objects share one account, so each family below is
checked against the caller's tenant; any relayed route that is neither one of them nor
stateless is refused unless the operator shares it (``auth.shared_routes``).
"""

from __future__ import annotations

from gateway.protocols.declaration import Owned, answer_id

FILE_FIELDS = (
    "file_id",
    "file_ids",
    "input_file_id",
    "output_file_id",
    "error_file_id",
    "training_file",
    "validation_file",
    "result_files",
)


def _family(
    kind: str, called: str, collection: str, object: str, *fields: str, actions: tuple[str, ...] = (), code: str = ""
) -> Owned:
    """A family created by ``POST {collection}`` (its id read from the answer's ``id``)."""
    code = code or f"{kind}_not_found"
    return Owned(kind, called, code, collection, answer_id, fields=fields, object=object, actions=actions)


OWNED = (
    Owned(
        "response",
        "Previous response",
        "previous_response_not_found",
        "/v1/responses",
        fields=("previous_response_id",),
        object="response",
        actions=("input_tokens", "compact"),
    ),
    _family("conversation", "Conversation", "/v1/conversations", "conversation"),
    _family("file", "File", "/v1/files", "file", *FILE_FIELDS),
    _family("upload", "Upload", "/v1/uploads", "upload", "upload_id"),
    _family("batch", "Batch", "/v1/batches", "batch", "batch_id"),
    _family("vector_store", "Vector store", "/v1/vector_stores", "vector_store", "vector_store_id", "vector_store_ids"),
    _family("thread", "Thread", "/v1/threads", "thread", "thread_id", actions=("runs",)),
    _family("assistant", "Assistant", "/v1/assistants", "assistant", "assistant_id"),
    _family("fine_tuning_job", "Fine-tuning job", "/v1/fine_tuning/jobs", "fine_tuning.job", "fine_tuning_job_id"),
    _family("container", "Container", "/v1/containers", "container", "container_id"),
    _family("eval", "Eval", "/v1/evals", "eval", "eval_id"),
    _family("video", "Video", "/v1/videos", "video", "video_id", "remix_video_id"),
    # A fine-tuning job's model: named by ``model`` in any request, claimed from the job's answer.
    Owned("fine_tuned_model", "Model", "model_not_found", fields=("model", "fine_tuned_model"), prefix="ft:"),
)

# Routes of the OpenAI API that keep nothing of a request: relayed freely with the operator's key.
STATELESS = (
    "GET /v1/models",
    "GET /v1/models/{model}",
    "POST /v1/embeddings",
    "POST /v1/moderations",
    "POST /v1/completions",
    "POST /v1/audio/speech",
    "POST /v1/audio/transcriptions",
    "POST /v1/audio/translations",
    "POST /v1/images/generations",
    "POST /v1/images/edits",
    "POST /v1/images/variations",
)
