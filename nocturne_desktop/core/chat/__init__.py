"""The chat: the agent's prompt from memory (:mod:`.agent`), the write-time encoder
(:mod:`.encoder`) and the hand edits said in chat (:mod:`.edits`)."""
