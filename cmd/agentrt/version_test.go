package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/parsers"
)

func TestVersion(t *testing.T) {
	var out, errb bytes.Buffer
	if rc := run(context.Background(), []string{"version"}, stdio{out: &out, err: &errb}); rc != 0 {
		t.Fatalf("rc %d, stderr %s", rc, errb.String())
	}
	got := out.String()
	for _, want := range []string{"agentrt ", "\ngo go1.", "\ncommit ", "\nparsers.wasm sha256 " + sha(parsers.Wasm()), "\nloop_limiter.wasm sha256 "} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if rc := run(context.Background(), []string{"version", "extra"}, stdio{out: &out, err: &errb}); rc != exitUsage {
		t.Errorf("extra argument: rc %d", rc)
	}
}
