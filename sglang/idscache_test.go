package sglang

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// TestIDsCacheBodyIdentical: a conversation's requests sent with an IDsCache are byte for byte the requests sent
// without one (appendJSON of the same request), on the wire, whatever the ids do from turn to turn: grow (a next
// turn), stay (a retry after a 503), shrink or change in place (a dropped prompt, a cache given to another
// conversation); with text, logprob and Extra fields around them. With IDsAppendOnly (the ids change only as
// tito.Trajectory changes them: appended in place or moved, dropped with their capacity clipped, or replaced by a
// new array) likewise, the kept ids then taken uncompared where they lie.
func TestIDsCacheBodyIdentical(t *testing.T) {
	t.Run("compared", func(t *testing.T) { testIDsCacheBodyIdentical(t, false) })
	t.Run("append-only", func(t *testing.T) { testIDsCacheBodyIdentical(t, true) })
}

func testIDsCacheBodyIdentical(t *testing.T, appendOnly bool) {
	var (
		mu     sync.Mutex
		bodies [][]byte
		fail   = map[int]bool{} // requests answered 503 (by arrival)
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		// a body in parts (over joinBelow) comes chunked, a joined one with its length
		if chunked := slices.Equal(r.TransferEncoding, []string{"chunked"}); len(b) > joinBelow {
			if !chunked || r.ContentLength != -1 {
				t.Errorf("a body of %d bytes came with Transfer-Encoding %q and Content-Length %d, want chunked", len(b), r.TransferEncoding, r.ContentLength)
			}
		} else if chunked || r.ContentLength != int64(len(b)) {
			t.Errorf("Content-Length %d (Transfer-Encoding %q) for a body of %d bytes", r.ContentLength, r.TransferEncoding, len(b))
		}
		mu.Lock()
		n := len(bodies)
		bodies = append(bodies, b)
		f := fail[n]
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if f {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error":{"message":"busy"}}`))
			return
		}
		_, _ = w.Write(fixture(t, "generate_response.json", "response"))
	}))
	t.Cleanup(srv.Close)
	c := testClient(t, nil, srv.URL)

	rng := rand.New(rand.NewPCG(3, 4))
	var cache IDsCache
	var ids []int32
	var small, large bool // bodies sent joined, and in parts
	for turn := range 60 {
		switch op := rng.IntN(8); {
		case op < 5 || len(ids) == 0:
			for range 1 + rng.IntN(700) { // past joinBelow half-way: both ways of sending a body
				ids = append(ids, int32(rng.IntN(151000)))
			}
		case op == 5 && appendOnly: // DropPending: shorter, capacity clipped; then a different prompt
			k := rng.IntN(len(ids)) + 1
			ids = append(ids[:k:k], int32(rng.IntN(151000)))
		case op == 5:
			ids = slices.Clone(ids[:rng.IntN(len(ids))+1])
		case op == 6 && appendOnly: // a new array (another sample) with one id different
			ids = slices.Clone(ids)
			ids[rng.IntN(len(ids))]++
		case op == 6:
			ids[rng.IntN(len(ids))]++
		}
		req := &GenerateRequest{
			InputIDs:        ids,
			SamplingParams:  SamplingParams{MaxNewTokens: 100 + turn, Temperature: new(0.7), StopTokenIDs: []int32{151645}},
			ReturnLogprob:   turn%3 != 0,
			LogprobStartLen: len(ids) - 1,
			RID:             "conv." + strconv.Itoa(turn),
			IDsCache:        &cache,
			IDsAppendOnly:   appendOnly,
		}
		if turn%7 == 3 {
			req.Text = "text <&> \u2028 too"
		}
		if turn%5 == 2 {
			req.Extra = map[string]any{"extra_key": "k", "custom_logit_processor": nil}
		}
		mu.Lock()
		first := len(bodies)
		retried := turn%4 == 1
		fail[first] = retried
		mu.Unlock()
		if _, err := c.Generate(context.Background(), "conv", req); err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		mu.Lock()
		got := bodies[first:]
		mu.Unlock()
		if want := 1 + b2i(retried); len(got) != want {
			t.Fatalf("turn %d: %d requests, want %d", turn, len(got), want)
		}
		for i, b := range got {
			small = small || len(b) <= joinBelow
			large = large || len(b) > joinBelow
			plain := *req
			plain.IDsCache = nil
			plain.RID = req.RID
			if i > 0 {
				plain.RID += "-retry" + strconv.Itoa(i+1)
			}
			want, err := plain.appendJSON(nil)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(b, want) {
				t.Fatalf("turn %d, attempt %d: the body with the cache differs from the body without\ngot  %.200s\nwant %.200s", turn, i+1, b, want)
			}
		}
	}
	if !small || !large {
		t.Errorf("bodies joined: %v, in parts: %v; the test wants both", small, large)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPartsReader: the parts come out in order, whatever the reader's buffer or a writer that takes them whole
// (WriteTo, which skips empty parts: to a chunked writer an empty write would end the body).
func TestPartsReader(t *testing.T) {
	parts := [][]byte{[]byte("abc"), nil, []byte("d"), []byte("efghij")}
	for _, size := range []int{1, 2, 3, 5, 64} {
		r := newPartsReader(parts)
		var out []byte
		buf := make([]byte, size)
		for {
			n, err := r.Read(buf)
			out = append(out, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil || n == 0 {
				t.Fatalf("buffer %d: Read = %d, %v", size, n, err)
			}
		}
		if string(out) != "abcdefghij" {
			t.Errorf("buffer %d: read %q", size, out)
		}
	}
	for _, read := range []int{0, 1, 4} { // WriteTo after Reads of that many bytes
		r := newPartsReader(parts)
		head := make([]byte, read)
		if _, err := io.ReadFull(r, head); err != nil {
			t.Fatal(err)
		}
		w := &writesRecorder{}
		n, err := r.WriteTo(w)
		if err != nil || n != int64(10-read) || string(head)+strings.Join(w.writes, "") != "abcdefghij" {
			t.Errorf("after reading %q: WriteTo = %d, %v; writes %q", head, n, err, w.writes)
		}
		for _, s := range w.writes {
			if s == "" {
				t.Errorf("after reading %q: an empty write in %q", head, w.writes)
			}
		}
	}
	if string(parts[0]) != "abc" || string(parts[3]) != "efghij" {
		t.Errorf("the reader changed its parts: %q", parts)
	}
}

type writesRecorder struct{ writes []string }

func (w *writesRecorder) Write(p []byte) (int, error) {
	w.writes = append(w.writes, string(p))
	return len(p), nil
}
