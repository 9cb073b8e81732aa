package main

import (
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

const dashboardPath = "../../deploy/grafana/agentrt.json"

// grafanaDashboard is the part of a Grafana dashboard JSON model the test reads.
type grafanaDashboard struct {
	UID        string `json:"uid"`
	Title      string `json:"title"`
	Templating struct {
		List []struct {
			Name       string          `json:"name"`
			Type       string          `json:"type"`
			Query      json.RawMessage `json:"query"`
			Datasource *grafanaDS      `json:"datasource"`
		} `json:"list"`
	} `json:"templating"`
	Panels []grafanaPanel `json:"panels"`
}

type grafanaDS struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type grafanaPanel struct {
	ID         int        `json:"id"`
	Type       string     `json:"type"`
	Title      string     `json:"title"`
	Datasource *grafanaDS `json:"datasource"`
	GridPos    *struct {
		H, W, X, Y int
	} `json:"gridPos"`
	Targets []struct {
		RefID      string     `json:"refId"`
		Expr       string     `json:"expr"`
		Datasource *grafanaDS `json:"datasource"`
	} `json:"targets"`
	Panels []grafanaPanel `json:"panels"` // a collapsed row's
}

// grafanaVars are the dashboard's variables as a query reaches Prometheus (Grafana interpolates them first).
var grafanaVars = strings.NewReplacer("$__rate_interval", "1m", "${__rate_interval}", "1m", "$__interval", "15s",
	`"$instance"`, `".*"`, "${datasource}", "")

// readDashboard reads deploy/grafana/agentrt.json and checks its shape: every panel with a unique id and a place
// on the grid, every query with a refId and the dashboard's Prometheus data source variable.
func readDashboard(t *testing.T) (exprs []string, varMetrics []string) {
	t.Helper()
	b, err := os.ReadFile(dashboardPath)
	if err != nil {
		t.Fatal(err)
	}
	var d grafanaDashboard
	dec := json.NewDecoder(strings.NewReader(string(b)))
	if err := dec.Decode(&d); err != nil {
		t.Fatalf("%s: %v", dashboardPath, err)
	}
	if d.UID == "" || d.Title == "" {
		t.Errorf("the dashboard has no uid or title")
	}
	hasDS := false
	for _, v := range d.Templating.List {
		switch v.Type {
		case "datasource":
			hasDS = v.Name == "datasource" && strings.Contains(string(v.Query), "prometheus")
		case "query":
			var q struct{ Query string }
			if json.Unmarshal(v.Query, &q) != nil {
				json.Unmarshal(v.Query, &q.Query)
			}
			m := regexp.MustCompile(`^label_values\((\w+),\s*\w+\)$`).FindStringSubmatch(q.Query)
			if m == nil {
				t.Errorf("variable %s: query %q is not label_values(metric, label)", v.Name, q.Query)
				continue
			}
			varMetrics = append(varMetrics, m[1])
		}
	}
	if !hasDS {
		t.Error(`the dashboard has no "datasource" variable of type prometheus`)
	}
	ids := map[int]string{}
	var walk func(ps []grafanaPanel)
	walk = func(ps []grafanaPanel) {
		for _, p := range ps {
			if prev, dup := ids[p.ID]; dup || p.ID == 0 {
				t.Errorf("panel %q: id %d (also %q)", p.Title, p.ID, prev)
			}
			ids[p.ID] = p.Title
			if p.GridPos == nil || p.GridPos.W == 0 || p.GridPos.H == 0 || p.GridPos.X+p.GridPos.W > 24 {
				t.Errorf("panel %q: gridPos %+v", p.Title, p.GridPos)
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Title == "" || len(p.Targets) == 0 || p.Datasource == nil || p.Datasource.UID != "${datasource}" {
				t.Errorf("panel %d %q: needs a title, queries and the ${datasource} data source", p.ID, p.Title)
			}
			for _, q := range p.Targets {
				if q.RefID == "" || q.Expr == "" || q.Datasource == nil || q.Datasource.UID != "${datasource}" {
					t.Errorf("panel %q: query %q needs a refId, an expr and the ${datasource} data source", p.Title, q.Expr)
				}
				exprs = append(exprs, q.Expr)
			}
		}
	}
	walk(d.Panels)
	return exprs, varMetrics
}

type promqlSelector struct {
	Metric string `json:"metric"`
	Fn     string `json:"fn"`
}

type promqlParse struct {
	Expr      string           `json:"expr"`
	Errors    []string         `json:"errors"`
	Selectors []promqlSelector `json:"selectors"`
}

// parsePromQL parses each expression with Prometheus's own PromQL grammar (deploy/grafana/promql/names.cjs on
// @prometheus-io/lezer-promql, installed by scripts/setup.d/91-promql.sh).
func parsePromQL(t *testing.T, exprs []string) []promqlParse {
	t.Helper()
	mods := filepath.Join(os.Getenv("AGENTRT_CACHE"), "npm-promql", "node_modules")
	node, err := exec.LookPath("node")
	if _, serr := os.Stat(filepath.Join(mods, "@prometheus-io", "lezer-promql")); err != nil || serr != nil || os.Getenv("AGENTRT_CACHE") == "" {
		if os.Getenv("CI") == "true" {
			t.Fatalf("node or the PromQL grammar is missing (%v, %v): make setup runs scripts/setup.d/91-promql.sh", err, serr)
		}
		t.Skip("node or the PromQL grammar is missing: run scripts/setup.d/91-promql.sh (make setup) and source ~/.cache/agentrt/env.sh")
	}
	in, _ := json.Marshal(exprs)
	cmd := exec.Command(node, "../../deploy/grafana/promql/names.cjs")
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("names.cjs: %v\n%s", err, msg)
	}
	var res []promqlParse
	if err := json.Unmarshal(out, &res); err != nil || len(res) != len(exprs) {
		t.Fatalf("names.cjs answered %d results for %d expressions (%v)", len(res), len(exprs), err)
	}
	return res
}

// TestPromQLGrammar: the grammar the dashboard test trusts reports a broken query and finds the metrics of a
// good one, each with the function it is an argument of.
func TestPromQLGrammar(t *testing.T) {
	res := parsePromQL(t, []string{`histogram_quantile(0.9, sum by (le) (rate(a_bucket{k="v"}[1m]))) / b`, "sum(rate(x[1m]) by"})
	if want := []promqlSelector{{"a_bucket", "rate"}, {"b", ""}}; len(res[0].Errors) > 0 || !slices.Equal(res[0].Selectors, want) {
		t.Errorf("a good query: %+v, want selectors %v", res[0], want)
	}
	if len(res[1].Errors) == 0 {
		t.Errorf("a broken query: no syntax error in %+v", res[1])
	}
}

// TestGrafanaDashboardMetrics: every metric that deploy/grafana/agentrt.json queries is in the /metrics of a
// running `agentrt serve` that has run episodes (tool calls, a malformed one, rewards), with the type its query
// needs: rate() and increase() over counters and histogram series, plain selectors over gauges.
func TestGrafanaDashboardMetrics(t *testing.T) {
	if testing.Short() {
		t.Skip("runs agentrt serve")
	}
	exprs, varMetrics := readDashboard(t)
	for i, e := range exprs {
		exprs[i] = grafanaVars.Replace(e)
	}
	parsed := parsePromQL(t, exprs)
	for _, p := range parsed {
		if len(p.Errors) > 0 {
			t.Errorf("query %q is not valid PromQL: %s", p.Expr, strings.Join(p.Errors, "; "))
		}
		if len(p.Selectors) == 0 {
			t.Errorf("query %q selects no metric", p.Expr)
		}
	}

	dir := t.TempDir()
	srv := startServe(t, dir, "", "[agent.reward]\nplugin = \"builtin:math_reward\"\n",
		"malformed_rate = 0.0", "malformed_rate = 0.3", "wrong_answer_rate = 0.0", "wrong_answer_rate = 0.3")
	defer srv.proc.kill9(t)
	tr := srv.trainer(t)
	tr.run(t, map[string]any{"request_id": "dash", "items": items("q", 8, "What is 17*23+5?", "What is 9*9+9?")})
	resp, err := http.Get(srv.base + "/metrics")
	if err != nil {
		failWithLog(t, srv.log, "GET /metrics: %v", err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation) // Prometheus's own parser of the text format
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	// kind is what a series of the exposition is: "counter" (counters, and a histogram's _bucket, _sum and _count
	// series, which only grow) or "gauge".
	kind := map[string]string{}
	for name, f := range families {
		switch f.GetType() {
		case dto.MetricType_COUNTER:
			kind[name] = "counter"
		case dto.MetricType_HISTOGRAM, dto.MetricType_SUMMARY:
			for _, s := range []string{"_bucket", "_sum", "_count"} {
				kind[name+s] = "counter"
			}
		default:
			kind[name] = "gauge"
		}
	}
	if kind["agentrt_parse_errors_total"] == "" || kind["agentrt_plugin_call_seconds_bucket"] == "" {
		t.Fatalf("the run made no malformed tool call or no tool call: /metrics has %d families", len(families))
	}
	used := map[string]bool{}
	for i, p := range parsed {
		for _, s := range p.Selectors {
			used[s.Metric] = true
			k, ok := kind[s.Metric]
			switch {
			case !ok:
				t.Errorf("query %q: %s is not in agentrt's /metrics", exprs[i], s.Metric)
			case (s.Fn == "rate" || s.Fn == "irate" || s.Fn == "increase") && k != "counter":
				t.Errorf("query %q: %s(%s) over a %s", exprs[i], s.Fn, s.Metric, k)
			case s.Fn == "" && k != "gauge":
				t.Errorf("query %q: %s is a %s; take its rate", exprs[i], s.Metric, k)
			}
		}
	}
	for _, m := range varMetrics {
		if kind[m] == "" {
			t.Errorf("a variable's label_values reads %s, which is not in /metrics", m)
		}
	}
	// What the issue asks the dashboard to show.
	for _, m := range []string{"agentrt_episodes_total", "agentrt_sglang_generate_seconds_bucket", "agentrt_plugin_call_seconds_bucket",
		"agentrt_episodes_queued", "agentrt_sglang_worker_queued", "agentrt_sglang_worker_in_flight", "agentrt_spool_backlog", "agentrt_spool_bytes"} {
		if !used[m] {
			t.Errorf("the dashboard does not show %s", m)
		}
	}
	t.Logf("%d queries over %d metrics checked against /metrics", len(exprs), len(used))
}
