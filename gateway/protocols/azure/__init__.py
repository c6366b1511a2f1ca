"""Azure OpenAI (chat completions and the Responses API on Azure's paths) as guarded protocols
(``protocol``): the chat and Responses packages' roles, on Azure's routes and upstream."""
