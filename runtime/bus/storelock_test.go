package bus

import (
	"os"
	"strconv"
	"strings"
	"testing"
)

// One embedded store, one process's server: a second Open of a store in use is refused with a message naming the
// store and its holder, and the store is free again once the first bus is closed.
func TestStoreInUseIsRefused(t *testing.T) {
	cfg := testConfig(t)
	first, err := Open(patienceCtx(t), cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Open(patienceCtx(t), cfg, nil)
	want := "the store " + cfg.Dir + " is in use by another process (pid " + strconv.Itoa(os.Getpid()) + ")"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("second Open of %s: %v; want an error containing %q", cfg.Dir, err, want)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	openBus(t, cfg) // free again
}
