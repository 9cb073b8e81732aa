package testutil

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// recorder is a testing.TB that keeps what Fatalf says instead of stopping the test.
type recorder struct {
	testing.TB
	msg string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.msg = fmt.Sprintf(format, args...)
}

func TestHungNamesTheWaitAndDumpsGoroutines(t *testing.T) {
	old := Patience
	Patience = time.Millisecond
	defer func() { Patience = old }()
	r := &recorder{TB: t}
	Until(r, "the moon to turn blue", func() bool { return r.msg != "" })
	if !strings.Contains(r.msg, "waiting for the moon to turn blue") || !strings.Contains(r.msg, "goroutine ") ||
		!strings.Contains(r.msg, "TestHungNamesTheWaitAndDumpsGoroutines") {
		t.Fatalf("message = %.300q", r.msg)
	}
}

func TestRecv(t *testing.T) {
	ch := make(chan int, 1)
	ch <- 7
	if v, ok := Recv(t, "seven", ch); v != 7 || !ok {
		t.Fatalf("Recv = %d, %v", v, ok)
	}
	close(ch)
	if _, ok := Recv(t, "the close", ch); ok {
		t.Fatal("Recv on a closed channel said ok")
	}
}
