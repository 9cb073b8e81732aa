package turn

import (
	"encoding/json"
	"testing"

	"github.com/agentrt/agentrt/sglang"
	"github.com/agentrt/agentrt/tito"
)

// The spans SGLang reports reach the trajectory JSON under the same names slime reads.
func TestWeightSpansReachTurnInfo(t *testing.T) {
	in := []sglang.WeightSpan{{Version: "7", Start: 0, End: 2}, {Version: "8", Start: 2, End: 5}}
	b, err := json.Marshal(tito.TurnInfo{WeightVersion: "8", WeightVersions: weightSpans(in)})
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		WeightVersions []map[string]any `json:"weight_versions"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.WeightVersions) != 2 || got.WeightVersions[1]["version"] != "8" || got.WeightVersions[1]["start"] != 2.0 || got.WeightVersions[1]["end"] != 5.0 {
		t.Fatalf("turn JSON %s", b)
	}
	if weightSpans(nil) != nil {
		t.Fatal("no spans must stay absent from the JSON")
	}
}
