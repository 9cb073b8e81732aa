package envtool

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Held before issue 27, kept: a hostile environment service (answers past the cap, answers that are not JSON or
// lack their content, an error page of 10 MB) fails the call as an environment error, bounded, never as a tool
// result the model would read as the environment's answer.
func TestHostileService(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/tools":
			io.WriteString(w, `{"service": "hostile", "tools": [{"name": "poke"}]}`)
		case r.URL.Path == "/create":
			io.WriteString(w, `{"env_id": "e"}`)
		case strings.HasSuffix(r.URL.Path, "/call"):
			var body struct {
				Arguments struct {
					Mode string `json:"mode"`
				} `json:"arguments"`
			}
			json.NewDecoder(r.Body).Decode(&body)
			switch body.Arguments.Mode {
			case "huge": // past the 64 MiB answer cap, written in pieces
				io.WriteString(w, `{"content": "`)
				chunk := strings.Repeat("x", 1<<20)
				for range 70 {
					if _, err := io.WriteString(w, chunk); err != nil {
						return
					}
				}
				io.WriteString(w, `"}`)
			case "garbage":
				io.WriteString(w, "<html>not JSON</html>")
			case "empty":
				io.WriteString(w, `{"is_error": false}`)
			case "error-page":
				w.WriteHeader(http.StatusInternalServerError)
				io.WriteString(w, strings.Repeat("E", 10<<20))
			}
		default:
			io.WriteString(w, `{}`)
		}
	}))
	t.Cleanup(srv.Close)
	tool := open(t, Config{URL: srv.URL})
	begin(t, tool, "a", `{}`)
	for mode, want := range map[string]string{
		"huge":       "over 67108864 bytes",
		"garbage":    "",
		"empty":      "no content",
		"error-page": "...",
	} {
		r, err := tool.CallEpisode(context.Background(), "a", "poke", json.RawMessage(`{"mode": "`+mode+`"}`))
		var e *Error
		if !errors.As(err, &e) || !strings.Contains(err.Error(), want) || r.Text != nil {
			t.Errorf("%s: %+v %v, want an environment error containing %q", mode, r, err, want)
		}
		if len(err.Error()) > 1000 {
			t.Errorf("%s: an error of %d bytes", mode, len(err.Error()))
		}
	}
}
