"""Providers: one `ChatRequest` in, a stream of `StreamEvent`s out (see `base.Provider`).

`factory.create_provider` builds one by id: `anthropic` and `openai` (official SDKs, fixed
endpoints), `local` (an OpenAI-compatible server at the settings URL), `offline` (the STRIDE
rules engine) and `replay` (a recorded event file). Nothing is imported here so that code
which never talks to a model does not load the SDKs.
"""
