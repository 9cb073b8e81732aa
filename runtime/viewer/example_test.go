package viewer_test

import (
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/agentrt/agentrt/runtime/viewer"
	"github.com/agentrt/agentrt/tito"
)

// Example serves the viewer over a ring of recent trajectories, as `agentrt serve` does: the rollout service
// adds each finished trajectory, and the page (or anything else) reads them through /view/api. Token texts come
// from the model's tokenizer on the server.
func Example() {
	tok, err := tito.LoadTokenizer("../../tito/testdata/model/tiny/tokenizer.json")
	if err != nil {
		log.Fatal(err)
	}
	defer tok.Close()

	ring := viewer.NewRing("example", 100, 64<<20)
	defer ring.Close()
	t := tito.NewTrajectory()
	t.AppendPrompt([]int32{1, 4, 3}) // <s> hello <eot>
	ids, start := t.NextRequest()
	t.AppendResponse(tito.Response{InputIDs: ids, LogprobStartLen: start, OutputIDs: []int32{5, 6, 3},
		OutputLogprobs: []float64{-0.1, -2, -0.05}, Turn: tito.TurnInfo{FinishReason: "stop"}})
	t.ID, t.GroupID, t.Status = "req/item/0", "req/item", "completed"
	ring.Add(t) // what the service does for every finished episode

	h := viewer.NewHandler(ring, viewer.WithTokenizers(func(model, revision string) (viewer.Tokenizer, string) { return tok, "tiny" }))
	defer h.Close()
	mux := http.NewServeMux()
	mux.Handle(viewer.Prefix, h) // the page is at /view/
	srv := httptest.NewServer(mux)
	defer srv.Close()

	var list struct {
		Matched int
		Items   []struct{ ID, Status string }
	}
	get(srv.URL+viewer.Prefix+"api/trajectories?status=completed", &list)
	fmt.Println(list.Matched, "completed:", list.Items[0].ID)
	var d struct {
		TokenView struct {
			Text    []string
			Mask    []int
			Logprob []*float64
		} `json:"token_view"`
	}
	get(srv.URL+viewer.Prefix+"api/trajectory?id=req/item/0", &d)
	fmt.Printf("texts %q\nloss mask %v, last logprob %v\n", d.TokenView.Text, d.TokenView.Mask, *d.TokenView.Logprob[5])
	// Output:
	// 1 completed: req/item/0
	// texts ["<s>" " hello" " <eot>" " world" " !" " <eot>"]
	// loss mask [0 0 0 1 1 1], last logprob -0.05
}

func get(url string, v any) {
	resp, err := http.Get(url)
	if err != nil {
		log.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		log.Fatal(err)
	}
}
