package emulator

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestHammer runs many concurrent multi-turn episodes (latency on, a running-request limit, faults off) and
// checks every response: cached_tokens for turn k+1 covers turn k's prompt and output, logprobs recompute,
// outputs end with the stop id.
func TestHammer(t *testing.T) {
	m := qwen(t)
	cfg := testConfig(m)
	cfg.Latency = Latency{Fixed: time.Millisecond, PerOutputToken: 100 * time.Microsecond}
	cfg.MaxRunningRequests = 64
	_, url := start(t, cfg, m.Tokenizer)
	const episodes, turns = 200, 3
	tr := &http.Transport{MaxIdleConnsPerHost: episodes}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	var wg sync.WaitGroup
	errs := make(chan error, episodes)
	for e := 0; e < episodes; e++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids := qwenIDs(m, fmt.Sprintf("Episode %d: compute %d*%d and %d+%d.", e, e, e+1, e, 7), calcToolJSON)
			want := 0 // the previous turn's prompt + output, less its last id
			for turn := 0; turn < turns; turn++ {
				body, _ := json.Marshal(map[string]any{"rid": fmt.Sprintf("ep%d-t%d", e, turn), "input_ids": ids, "return_logprob": true, "logprob_start_len": len(ids) - 1})
				resp, err := client.Post(url+"/generate", "application/json", strings.NewReader(string(body)))
				if err != nil {
					errs <- err
					return
				}
				var g struct {
					OutputIDs []int32 `json:"output_ids"`
					MetaInfo  struct {
						CachedTokens int            `json:"cached_tokens"`
						Out          [][3]any       `json:"output_token_logprobs"`
						In           [][3]any       `json:"input_token_logprobs"`
						FinishReason map[string]any `json:"finish_reason"`
					} `json:"meta_info"`
				}
				err = json.NewDecoder(resp.Body).Decode(&g)
				resp.Body.Close()
				if err != nil {
					errs <- err
					return
				}
				if g.OutputIDs[len(g.OutputIDs)-1] != 151645 || len(g.MetaInfo.Out) != len(g.OutputIDs) || len(g.MetaInfo.In) != 1 {
					errs <- fmt.Errorf("episode %d turn %d: %+v", e, turn, g)
					return
				}
				traj := append(slices.Clone(ids), g.OutputIDs...)
				for i, x := range g.MetaInfo.Out {
					if x[0].(float64) != recompute(traj, len(ids)+i) {
						errs <- fmt.Errorf("episode %d turn %d: logprob %d", e, turn, i)
						return
					}
				}
				// other episodes share the system prompt, so turn 0 hits too; a later turn hits all of the last one
				if c := g.MetaInfo.CachedTokens; c < want || c > len(ids)-1 || (turn > 0 && c != want) {
					errs <- fmt.Errorf("episode %d turn %d: cached_tokens %d, want %d", e, turn, c, want)
					return
				}
				want = len(traj) - 1
				ids = append(traj, m.Tokenizer.Encode(qwenToolTurn("1"), false)...)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
