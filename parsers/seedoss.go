package parsers

// seed_oss: ByteDance Seed-OSS tool calls, as its chat template writes them.
//
//	<seed:tool_call>
//	<function=get_weather>
//	<parameter=city>Paris</parameter>
//	</function>
//	</seed:tool_call>
//
// The body is Qwen3-Coder's (<function=NAME> holding <parameter=NAME>value</parameter>), with the same value
// rules; reasoning sits in <seed:think>...</seed:think>.

const (
	seedToolCallOpen  = "<seed:tool_call>"
	seedToolCallClose = "</seed:tool_call>"
	seedThinkOpen     = "<seed:think>"
	seedThinkClose    = "</seed:think>"
)

var seedTags = xmlTags{open: seedToolCallOpen, close: seedToolCallClose, fnOpen: qwenTags.fnOpen,
	fnClose: qwenTags.fnClose, pOpen: qwenTags.pOpen, pClose: qwenTags.pClose, nameEnd: qwenTags.nameEnd}

func scanSeedOSS(st *state, seg segment) { scanFunctionBlocks(st, seg, &seedTags) }
