//go:build wasip1

// Command websearch is an example tool plugin that reaches the network through the runtime's outbound HTTP grant
// (plugins/sdk/go/fetch): tool "search" sends the query to a search service and returns its answer as the tool
// result. Config: {"endpoint": "https://search.example.com/search"}; the query goes in the q parameter.
//
// It makes requests only as far as runtime.toml grants them, e.g.
//
//	[[agent.tools]]
//	plugin = "plugins/examples/go-websearch/websearch.wasm"
//	config = { endpoint = "https://search.example.com/search" }
//	http = { hosts = ["search.example.com"], requests_per_episode = 10, headers = { Authorization = "$SEARCH_TOKEN" } }
//
// Build: scripts/wasm.d/10-go-plugins.sh.
package main

import (
	"fmt"
	"net/url"

	sdk "github.com/agentrt/agentrt/plugins/sdk/go"
	"github.com/agentrt/agentrt/plugins/sdk/go/fetch"
)

var endpoint string

func init() {
	sdk.RegisterTools(sdk.Tools{
		Info: sdk.Info{
			Name:         "websearch",
			Version:      "1.0.0",
			Description:  "Web search through a granted search service.",
			ConfigSchema: sdk.RawJSON(`{"type":"object","properties":{"endpoint":{"type":"string"}},"required":["endpoint"]}`),
		},
		Specs: []sdk.ToolSpec{{Name: "search", Description: "Search the web; returns the search service's answer.",
			Parameters: sdk.RawJSON(`{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}`)}},
		Init: func(cfg sdk.Value) ([]sdk.ToolSpec, error) {
			endpoint = cfg.Get("endpoint").StrOr("")
			if endpoint == "" {
				return nil, fmt.Errorf("config.endpoint is required")
			}
			return nil, nil
		},
		Call: func(name string, args sdk.Value) (sdk.Result, error) {
			q := args.Get("query").StrOr("")
			if q == "" {
				return sdk.Result{}, sdk.Errorf("bad_arguments", "query is required")
			}
			resp, err := fetch.Get(endpoint + "?q=" + url.QueryEscape(q))
			if err != nil {
				return sdk.Result{}, err
			}
			if resp.Status != 200 {
				return sdk.Result{}, sdk.Errorf("search_failed", "the search service answered %d: %s", resp.Status, resp.Body)
			}
			return sdk.Text(resp.Body), nil
		},
	})
}

func main() {}
