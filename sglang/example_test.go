package sglang_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt/sglang"
)

// Example sends one token-in/token-out request. The server here replays SGLang's documented response
// (testdata/fixtures/generate_response.json); point Config.Workers at real SGLang servers instead.
func Example() {
	srv := replayServer("generate_response.json")
	defer srv.Close()

	cfg := sglang.DefaultConfig()
	cfg.Workers = []string{srv.URL}
	c, err := sglang.New(cfg)
	if err != nil {
		panic(err)
	}
	defer c.Close()

	resp, err := c.Generate(context.Background(), "episode-42", &sglang.GenerateRequest{
		InputIDs:        []int32{151644, 872, 198, 72357, 752, 264, 21646, 151645, 198, 151644, 77091, 198},
		SamplingParams:  sglang.SamplingParams{MaxNewTokens: 512, Temperature: new(1.0)},
		ReturnLogprob:   true,
		LogprobStartLen: -1,
		RID:             "rollout-42-turn-0",
	})
	switch {
	case errors.Is(err, sglang.ErrContextLength):
		fmt.Println("prompt too long: end the episode as truncated")
		return
	case err != nil:
		fmt.Println("failed:", err)
		return
	}
	m := resp.MetaInfo
	fmt.Println("finish:", m.FinishReason.Type, m.FinishReason.MatchedTokenID)
	fmt.Println("last output id:", resp.OutputIDs[len(resp.OutputIDs)-1])
	fmt.Println("first logprob:", m.OutputTokenLogprobs[0].Logprob)
	fmt.Println("tokens:", m.PromptTokens, "in,", m.CompletionTokens, "out,", m.CachedTokens, "cached; attempts:", resp.Attempts)
	// Output:
	// finish: stop 151645
	// last output id: 151645
	// first logprob: -1.4453125
	// tokens: 33 in, 14 out, 0 cached; attempts: 1
}

// replayServer answers /generate with the "response" object of a fixture.
func replayServer(name string) *httptest.Server {
	b, err := os.ReadFile(filepath.Join("testdata", "fixtures", name))
	if err != nil {
		panic(err)
	}
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(b, &doc); err != nil {
		panic(err)
	}
	body := doc["response"]
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	}))
}
