"""How each server says its model's context window, for the scripted server
(:meth:`tests.fakeserver.FakeLLM.describe_window`). Each body follows the server's
documentation (docs/endpoints.md, "The context window")."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tests.fakeserver import FakeLLM

WINDOW_LAYOUTS = ("llama.cpp", "llama.cpp-old", "llama.cpp-router", "lmstudio", "lmstudio-0.4",
                  "ollama", "vllm", "openrouter")
"""The ways a server says its model's context window (:func:`describe_window`)."""


def describe_window(
    fake: FakeLLM, layout: str, *, tokens: int | None, maximum: int | None, num_ctx: int | None
) -> None:
    """Set ``fake``'s routes, ``/props`` and ``/models`` fields the way ``layout`` says its
    first model's window (see :meth:`FakeLLM.describe_window`)."""
    model = fake.models[0] if fake.models else "fake-model"
    top = maximum if maximum is not None else tokens
    if layout == "llama.cpp":  # slot-shaped /props; /v1/models meta with n_ctx (newer)
        fake.props = _llamacpp_props(tokens or 0, slot_shaped=True)
        fake.model_fields[model] = {"owned_by": "llamacpp", "meta": {
            "vocab_type": 2, "n_vocab": 49152, "n_ctx": tokens, "n_ctx_train": top,
            "n_embd": 576, "n_params": 134515008, "size": 96576768}}
    elif layout == "llama.cpp-old":  # flat settings in /props; n_ctx_train only in meta
        fake.props = _llamacpp_props(tokens or 0, slot_shaped=False)
        fake.model_fields[model] = {"owned_by": "llamacpp", "meta": {
            "vocab_type": 2, "n_vocab": 128256, "n_ctx_train": top, "n_embd": 4096}}
    elif layout == "llama.cpp-router":  # /props routed by ?model=; /models lists many
        fake.props = _llamacpp_props(tokens or 0, slot_shaped=True)
        fake.props_need_model = True
        fake.models.append("other-model")
    elif layout == "lmstudio":  # 0.3.6+: GET /api/v0/models/{id}
        body: dict[str, Any] = {
            "id": model, "object": "model", "type": "llm", "publisher": "lmstudio-community",
            "arch": "qwen2", "compatibility_type": "gguf", "quantization": "Q4_K_M",
            "state": "loaded" if tokens else "not-loaded", "max_context_length": top}
        if tokens:
            body["loaded_context_length"] = tokens
        fake.serve("GET", f"/api/v0/models/{model}", body)
    elif layout == "lmstudio-0.4":  # GET /api/v1/models
        instances = [{"id": model, "config": {"context_length": tokens, "eval_batch_size": 512,
                                              "flash_attention": True}}] if tokens else []
        fake.serve("GET", "/api/v1/models", {"models": [
            {"type": "llm", "publisher": "qwen", "key": "qwen/qwen3-4b",
             "display_name": "Qwen3 4B", "loaded_instances": [], "max_context_length": 40960,
             "format": "gguf"},
            {"type": "llm", "publisher": "lmstudio-community", "key": model,
             "display_name": model, "architecture": "qwen2", "loaded_instances": instances,
             "max_context_length": top, "format": "gguf"},
        ]})
    elif layout == "ollama":  # tokens: loaded (in /api/ps); maximum: model_info
        running = [{"name": model, "model": model, "size": 5618579456,
                    "context_length": tokens, "size_vram": 5618579456}] if tokens else []
        fake.serve("GET", "/api/ps", {"models": running})
        params = 'stop "<|im_start|>"\nstop "<|im_end|>"'
        if num_ctx is not None:
            params = f"num_ctx {num_ctx}\n{params}"
        fake.serve("POST", "/api/show", {
            "parameters": params,
            "template": "{{ .Prompt }}", "capabilities": ["completion"],
            "details": {"format": "gguf", "family": "qwen2", "parameter_size": "7.6B"},
            "model_info": {"general.architecture": "qwen2", "qwen2.context_length": top,
                           "qwen2.embedding_length": 3584}})
    elif layout == "vllm":
        fake.model_fields[model] = {"owned_by": "vllm", "root": model, "max_model_len": tokens}
    elif layout == "openrouter":
        fake.model_fields[model] = {"name": model, "context_length": tokens,
                                    "top_provider": {"context_length": tokens}}
    else:
        raise ValueError(f"unknown layout {layout!r}; known: {', '.join(WINDOW_LAYOUTS)}")


def _llamacpp_props(n_ctx: int, *, slot_shaped: bool) -> dict[str, Any]:
    """llama.cpp's ``GET /props``: ``default_generation_settings`` is one slot's state in newer
    builds (``id``, ``n_ctx``, ``params``…), a flat set of sampling settings in older ones."""
    if slot_shaped:
        settings: dict[str, Any] = {
            "id": 0, "id_task": -1, "n_ctx": n_ctx, "speculative": False, "is_processing": False,
            "params": {"n_predict": -1, "seed": 4294967295, "temperature": 0.8, "top_k": 40},
            "prompt": "", "next_token": {"has_next_token": True, "n_remain": -1}}
    else:
        settings = {"n_ctx": n_ctx, "n_predict": -1, "model": "model.gguf", "seed": 4294967295,
                    "temperature": 0.8, "top_k": 40, "top_p": 0.95}
    props: dict[str, Any] = {"default_generation_settings": settings, "total_slots": 1,
                             "chat_template": "{{ messages }}"}
    if slot_shaped:
        props.update(model_path="model.gguf", build_info="b1-fake", is_sleeping=False)
    return props
