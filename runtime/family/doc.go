// Package family knows the model families agentrt runs: one table (Profiles) says, per family, which tool-call
// parser reads the model's output, how it marks reasoning, which tokens end a turn (and whether the stop token
// begins the next message, as GLM's do), and which chat_template_kwargs its template reads. Detect finds a model
// folder's family from its chat template (fingerprints) or its special tokens; runtime.toml's family and parser
// keys override it. SelfTest proves, on a canonical tool conversation, that an agent of the family can run
// token-exact: the delta the loop appends equals the full render's tail, and the parser reads back the tool call
// the template wrote. The runtime refuses to start an agent whose family fails it, and `agentrt model check`
// prints the profile and the self-test.
package family
