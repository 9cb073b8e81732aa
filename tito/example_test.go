package tito_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/agentrt/agentrt/tito"
)

// Example_trajectory shows one episode's token bookkeeping: load a model folder, tokenize the prompt, and record two
// model calls the way the agent loop does (AppendPrompt, NextRequest, the /generate call, AppendResponse).
// The folder is a tiny fixture; a real one (Qwen3, Llama 3.1) works the same.
func Example_trajectory() {
	m, err := tito.LoadModel("testdata/model/tiny")
	if err != nil {
		log.Fatal(err)
	}
	defer m.Close()
	tok := m.Tokenizer
	fmt.Println("stop ids:", m.StopIDs)

	traj := tito.NewTrajectory()
	if err := traj.AppendPrompt(tok.Encode("<s> hello world <eot>", false)); err != nil {
		log.Fatal(err)
	}
	ids, start := traj.NextRequest()
	fmt.Println("turn 0 sends:", ids, "logprob_start_len:", start)

	// What SGLang answered: output ids (stop token included) and logprobs; no input logprobs, since
	// logprob_start_len -1 asked for none (the first prompt stays null and SGLang's radix cache can serve it).
	lp := func(v float64) *float64 { return &v }
	err = traj.AppendResponse(tito.Response{
		InputIDs: ids, LogprobStartLen: start,
		OutputIDs: []int32{4, 6, 3}, OutputLogprobs: []float64{-0.75, -0.125, -0.0625},
		Turn: tito.TurnInfo{RID: "ep-1.0", FinishReason: "stop"},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("response text: %q\n", tok.Decode(traj.TokenIDs[4:], false))

	// A tool result, rendered as a template delta and tokenized, then the second call.
	if err := traj.AppendPrompt(tok.Encode("<s> world <eot>", false)); err != nil {
		log.Fatal(err)
	}
	ids, start = traj.NextRequest()
	fmt.Println("turn 1 sends:", ids, "logprob_start_len:", start)
	err = traj.AppendResponse(tito.Response{
		InputIDs: ids, LogprobStartLen: start,
		InputLogprobs: []*float64{nil, lp(-3), lp(-1), lp(-0.25)},
		OutputIDs:     []int32{5, 3}, OutputLogprobs: []float64{-0.5, -0.25},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := traj.Validate(); err != nil {
		log.Fatal(err)
	}
	traj.Audit(tok)
	traj.Status = "completed"

	b, _ := json.Marshal(traj.SlimeSample())
	fmt.Println(string(b))

	// A request that does not extend the trajectory is refused, never repaired.
	bad := tito.Response{InputIDs: []int32{1, 9}, OutputIDs: []int32{3}, OutputLogprobs: []float64{-1}}
	_ = traj.AppendPrompt([]int32{1})
	fmt.Println(traj.AppendResponse(bad))
	// Output:
	// stop ids: [3]
	// turn 0 sends: [1 4 5 3] logprob_start_len: -1
	// response text: "hello ! <eot>"
	// turn 1 sends: [1 4 5 3 4 6 3 1 5 3] logprob_start_len: 6
	// {"tokens":[1,4,5,3,4,6,3,1,5,3,5,3],"response_length":8,"loss_mask":[1,1,1,0,0,0,1,1],"rollout_log_probs":[-0.75,-0.125,-0.0625,-3,-1,-0.25,-0.5,-0.25],"reward":null,"status":"completed","weight_versions":[]}
	// tito: prefix invariant violated at turn 2, index 1: input_ids (2 tokens) are not the trajectory (13 tokens): they differ first at index 1 (sent 9, trajectory has 4)
}
