package parsers

// minimax-m2: MiniMax-M2 tool calls, as its chat template writes them.
//
//	<minimax:tool_call>
//	<invoke name="get_weather">
//	<parameter name="city">Paris</parameter>
//	<parameter name="days">3</parameter>
//	</invoke>
//	</minimax:tool_call>
//
// One block may hold several <invoke> elements. Values follow Qwen3-Coder's rules (the template writes strings
// raw and other values as JSON); reasoning is <think>...</think>.

var minimaxTags = xmlTags{open: "<minimax:tool_call>", close: "</minimax:tool_call>", fnOpen: `<invoke name="`,
	fnClose: "</invoke>", pOpen: `<parameter name="`, pClose: "</parameter>", nameEnd: `">`}

func scanMiniMaxM2(st *state, seg segment) { scanFunctionBlocks(st, seg, &minimaxTags) }
