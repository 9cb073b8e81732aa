package system

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"

	"github.com/agentrt/agentrt/runtime/hfhub"
	"github.com/agentrt/agentrt/tito"
)

// This file turns a model reference (a folder, or a Hugging Face model id with a revision) into a model folder:
// ids go through the hub cache that huggingface_hub uses, configured by the same environment variables.

// hubSnapshot fetches what tito reads of the model id at revision into the hub cache (HF_HUB_CACHE, HF_HOME,
// HF_ENDPOINT, HF_TOKEN, HF_HUB_OFFLINE as huggingface_hub reads them) and returns its snapshot.
func hubSnapshot(ctx context.Context, id, revision string, log *slog.Logger) (*hfhub.Snapshot, error) {
	cfg, err := hfhub.FromEnv(os.Getenv)
	if err != nil {
		return nil, err
	}
	c, err := hfhub.New(cfg, hfhub.WithLogger(log), hfhub.WithUserAgent("agentrt/"+buildVersion()))
	if err != nil {
		return nil, err
	}
	s, err := c.Snapshot(ctx, id, revision, tito.IsModelFile)
	if err != nil {
		return nil, fmt.Errorf("model %s (a Hugging Face model id: no folder of that name here): %w", id, err)
	}
	if len(s.Files) == 0 {
		return nil, fmt.Errorf("model %s: commit %s has none of the files a model folder needs (%s, %s)", id, s.Commit, tito.FileTokenizer, tito.FileTokenizerConfig)
	}
	log.Info("model resolved", "model", id, "revision", s.Revision, "commit", s.Commit, "dir", s.Dir, "offline", s.Offline)
	return s, nil
}

// ModelFolder resolves a model reference (a command's --model): a folder as it is, else a hub model id at revision
// ("" for main), fetched into the hub cache. A revision with a folder is an error.
func ModelFolder(ctx context.Context, model, revision string, log *slog.Logger) (string, error) {
	if st, err := os.Stat(model); (err == nil && st.IsDir()) || !hfhub.ValidRepoID(model) {
		if revision != "" {
			return "", fmt.Errorf("--revision applies to a Hugging Face model id (Org/Name); %s is a folder", model)
		}
		return model, nil
	}
	s, err := hubSnapshot(ctx, model, revision, log)
	if err != nil {
		return "", err
	}
	return s.Dir, nil
}

// buildVersion is the module version the binary was built as ("(devel)" from a checkout): the hub's user agent.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(unknown)"
}
