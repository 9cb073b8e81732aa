package viewer

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/agentrt/agentrt/tito"
)

// Folders loads the tokenizers of model folders on first need, for a source whose models no running service has
// loaded (`agentrt view`). resolve turns a trajectory's provenance model and revision into a folder (the folder
// itself, a Hugging Face cache snapshot, or one folder given for all); each folder's tokenizer.json is loaded once.
// Safe for concurrent use.
type Folders struct {
	resolve func(model, revision string) (string, error)
	mu      sync.Mutex
	loaded  map[string]*tito.Tokenizer
	failed  map[string]string
}

// NewFolders returns the loader.
func NewFolders(resolve func(model, revision string) (string, error)) *Folders {
	return &Folders{resolve: resolve, loaded: map[string]*tito.Tokenizer{}, failed: map[string]string{}}
}

// Lookup implements Tokenizers.
func (f *Folders) Lookup(model, revision string) (Tokenizer, string) {
	key := model + "@" + revision
	f.mu.Lock()
	defer f.mu.Unlock()
	if t := f.loaded[key]; t != nil {
		return t, model
	}
	if why, ok := f.failed[key]; ok {
		return nil, why
	}
	dir, err := f.resolve(model, revision)
	if err != nil {
		f.failed[key] = err.Error()
		return nil, f.failed[key]
	}
	path := filepath.Join(dir, "tokenizer.json")
	if _, err := os.Stat(path); err != nil {
		f.failed[key] = fmt.Sprintf("no tokenizer.json in the model folder %s: pass --model DIR", dir)
		return nil, f.failed[key]
	}
	t, err := tito.LoadTokenizer(path)
	if err != nil {
		f.failed[key] = err.Error()
		return nil, f.failed[key]
	}
	f.loaded[key] = t
	return t, model
}

// Close frees the tokenizers; call it after the Handler's Close.
func (f *Folders) Close() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, t := range f.loaded {
		t.Close()
	}
	f.loaded = map[string]*tito.Tokenizer{}
}
