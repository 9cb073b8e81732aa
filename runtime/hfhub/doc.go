// Package hfhub resolves a Hugging Face model id ("Qwen/Qwen3-8B", with a revision) to a folder of its files,
// the way the huggingface_hub Python library does: the same cache layout (models--Org--Name/blobs, snapshots/
// <commit>, refs/<revision>) under the same folder (HF_HUB_CACHE, else $HF_HOME/hub, else
// ~/.cache/huggingface/hub), the same environment (HF_ENDPOINT, HF_TOKEN and the token file, HF_HUB_OFFLINE) and
// the hub's HTTP protocol (/api/models/{id}/revision/{rev}, /{id}/resolve/{commit}/{file} with X-Repo-Commit,
// ETag and X-Linked-Etag, redirects, X-Error-Code). A cache written by huggingface_hub is read here and the other
// way round, online or offline.
//
// Snapshot fetches only the files its caller wants (agentrt wants a model's tokenizer and chat template files, not
// its weights), pins them to the commit the revision named at that moment, and checks each downloaded file against
// the hash the hub gives for it (sha256 for LFS files, the git blob sha1 for the others).
//
// It does not import the rest of agentrt: the config loader decides what is a model id (ValidRepoID), and the
// system calls Snapshot before loading the folder with tito. A Client is safe for concurrent use, and several
// processes may fill one cache at once (every file is written under a unique name and renamed into place).
//
// Read Example_snapshot first.
package hfhub
