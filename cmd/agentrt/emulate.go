package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/agentrt/agentrt/runtime/system"
	"github.com/agentrt/agentrt/sglang/emulator"
	"github.com/agentrt/agentrt/tito"
)

func runEmulate(ctx context.Context, args []string, io stdio) int {
	fs := newFlags("agentrt emulate", "emulate", io, "usage: agentrt emulate --model DIR|ORG/NAME [--revision REV] [flags]\n\nServe a protocol-faithful SGLang stand-in (no GPU) on --addr; it prints the address it listens on.\n\nflags:\n")
	def := emulator.DefaultConfig()
	model := fs.String("model", "", "Hugging Face model folder (tokenizer.json, tokenizer_config.json), or a model id (Org/Name) fetched into the hub cache: the tokenizer and stop ids")
	revision := fs.String("revision", "", "branch, tag or commit of a Hugging Face model id (default main)")
	addr := fs.String("addr", "127.0.0.1:30000", "listen address (port 0 picks a free port)")
	seed := fs.Uint64("seed", 0, "seed: replies, non-canonical and malformed choices and fault draws are deterministic for a seed")
	policy := fs.String("policy", emulator.PolicyAgentic, "reply policy: agentic (arithmetic to a calculator tool; else the tool the task names, arguments from its schema) or scripted (the --script replies)")
	format := fs.String("format", "", "tool-call format of agentic replies: hermes, qwen3_coder, llama3, seed_oss, minimax-m2, kimi_k2, glm45 (GLM-4.5/4.6), glm47 (GLM-4.7), deepseekv3, deepseekv31, mistral (Devstral), mistral_v11 (Small 3.2's [CALL_ID] form), mistral_nemo (Nemo's list form), gpt-oss or pythonic (default: hermes for ChatML prompts, llama3 for Llama 3 prompts)")
	script := fs.String("script", "", "JSONL script for --policy scripted: {\"key\": ..., \"replies\": [...]} per line")
	latency := fs.String("latency", "", "latency model FIXED[,PER_PROMPT_TOKEN[,PER_OUTPUT_TOKEN]], e.g. 50ms,20us,10ms (or fixed=..,prompt=..,output=..)")
	faults := fs.String("fault-rate", "", "fault rates: one number spread over all kinds, or KIND=RATE,... with kinds 503, 500, reset, stall, truncate, context (and stall_for=DURATION)")
	nonCanonical := fs.Float64("noncanonical-rate", 0, "fraction of replies with a non-canonical tokenization")
	malformed := fs.Float64("malformed-rate", 0, "fraction of tool-calling replies with a malformed tool call")
	wrong := fs.Float64("wrong-answer-rate", 0, "fraction of final answers that misreport the last tool result (so a correctness reward varies within a group)")
	think := fs.Float64("think-rate", 0, "fraction of agentic replies that open with a <think> block (ChatML, DeepSeek) or an analysis message (gpt-oss)")
	thinkWords := fs.Int("think-words", 0, "filler words in each <think> block, for long outputs (0: one sentence)")
	ctxLen := fs.Int("context-length", def.ContextLength, "context length (max_model_len)")
	maxRunning := fs.Int("max-running-requests", 0, "requests generating at once; the rest queue (0: unlimited)")
	maxQueued := fs.Int("max-queued-requests", 0, "queue bound; beyond it /generate answers 503 (0: unlimited)")
	cacheTokens := fs.Int("cache-tokens", def.CacheTokens, "prefix-cache capacity in tokens")
	kvTokens := fs.Int("kv-tokens", 0, "KV-capacity model: running requests share this many tokens; overfilled, the one that needs a token is retracted and prefilled again later, as SGLang (0: off)")
	drainTimeout := fs.Duration("drain-timeout", 60*time.Second, "on SIGTERM, /health and /ready answer 503 while requests in flight finish, for at most this long (0: until they have; a second signal quits at once)")
	weightVersion := fs.String("weight-version", def.WeightVersion, "initial weight_version")
	modelPath := fs.String("model-path", "", "model_path reported by /model_info and /v1/models (default: --model)")
	stopIDs := fs.String("stop-ids", "", "comma-separated stop ids (default: the model's EOS ids)")
	logFile := fs.String("log", "", "write every request and response as JSON lines to FILE")
	apiKey := fs.String("api-key", "", "require Authorization: Bearer KEY (SGLang's --api-key; /health stays open)")
	ignoreRID := fs.Bool("ignore-rid", false, "replies depend on the prompt, not on the client's rid: different clients (or samples) sending the same prompts get the same replies")
	incremental := fs.Bool("incremental-streaming-output", false, "SSE chunks carry deltas, as SGLang's flag of that name")
	if code, ok := fs.parse(args, nil); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return fs.fail(exitUsage, "unexpected argument %q", fs.Arg(0))
	}
	if *model == "" {
		return fs.fail(exitUsage, "--model is required (a Hugging Face model folder with tokenizer.json, or a model id ORG/NAME)")
	}
	cfg := def
	cfg.Seed, cfg.Policy, cfg.ToolFormat = *seed, *policy, *format
	cfg.NonCanonicalRate, cfg.MalformedRate, cfg.ThinkRate, cfg.WrongAnswerRate = *nonCanonical, *malformed, *think, *wrong
	cfg.ContextLength, cfg.MaxRunningRequests, cfg.MaxQueuedRequests = *ctxLen, *maxRunning, *maxQueued
	cfg.CacheTokens, cfg.WeightVersion = *cacheTokens, *weightVersion
	cfg.KVTokens, cfg.DrainTimeout = *kvTokens, *drainTimeout
	cfg.APIKey, cfg.IncrementalStreaming, cfg.ThinkWords, cfg.IgnoreRID = *apiKey, *incremental, *thinkWords, *ignoreRID
	var err error
	if cfg.Latency, err = emulator.ParseLatency(*latency); err != nil {
		fmt.Fprintf(io.err, "agentrt emulate: --latency: %v\n", err)
		return exitUsage
	}
	stall := cfg.Faults.StallFor
	if cfg.Faults, err = emulator.ParseFaults(*faults); err != nil {
		fmt.Fprintf(io.err, "agentrt emulate: --fault-rate: %v\n", err)
		return exitUsage
	}
	if cfg.Faults.StallFor == 0 {
		cfg.Faults.StallFor = stall
	}

	if err := cfg.Validate(); err != nil { // fail before the (slow) model load
		fmt.Fprintf(io.err, "agentrt emulate: %v\n", err)
		return exitUsage
	}
	var sc *emulator.Script
	if *script != "" {
		f, err := os.Open(*script)
		if err != nil {
			fmt.Fprintf(io.err, "agentrt emulate: --script: %v\n", err)
			return exitStartup
		}
		sc, err = emulator.ParseScript(f)
		f.Close()
		if err != nil {
			fmt.Fprintf(io.err, "agentrt emulate: --script %s: %v\n", *script, err)
			return exitStartup
		}
	}

	dir, err := system.ModelFolder(ctx, *model, *revision, slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	m, err := tito.LoadModel(dir)
	if err != nil {
		return fs.fail(exitStartup, "%v", err)
	}
	defer m.Close()
	cfg.ModelPath = *model
	if *modelPath != "" {
		cfg.ModelPath = *modelPath
	}
	cfg.VocabSize = m.Tokenizer.VocabSize()
	cfg.StopIDs = m.StopIDs
	if *stopIDs != "" {
		cfg.StopIDs = nil
		for _, f := range strings.Split(*stopIDs, ",") {
			id, err := strconv.ParseInt(strings.TrimSpace(f), 10, 32)
			if err != nil {
				fmt.Fprintf(io.err, "agentrt emulate: --stop-ids: %q is not a token id\n", f)
				return exitUsage
			}
			cfg.StopIDs = append(cfg.StopIDs, int32(id))
		}
	}
	if strings.Contains(strings.ToLower(*model), "llama") {
		cfg.ModelType, cfg.Architectures = "llama", []string{"LlamaForCausalLM"}
	}

	logger := slog.New(slog.NewTextHandler(io.err, &slog.HandlerOptions{Level: slog.LevelInfo}))
	opts := []emulator.Option{emulator.WithLogger(logger)}
	if sc != nil {
		opts = append(opts, emulator.WithScript(sc))
	}
	if *logFile != "" {
		f, err := os.OpenFile(*logFile, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o644)
		if err != nil {
			fmt.Fprintf(io.err, "agentrt emulate: --log: %v\n", err)
			return exitStartup
		}
		defer f.Close()
		opts = append(opts, emulator.WithLog(f))
	}
	srv, err := emulator.New(cfg, m.Tokenizer, opts...)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt emulate: %v\n", err)
		return exitUsage
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Fprintf(io.err, "agentrt emulate: listen on %s: %v\n", *addr, err)
		return exitStartup
	}
	fmt.Fprintf(io.out, "http://%s\n", ln.Addr())

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-ctx.Done():
			stop() // a second signal gets the default behaviour: the process dies
		case <-done:
		}
	}()
	if err := srv.Run(ctx, ln); err != nil {
		fmt.Fprintf(io.err, "agentrt emulate: %v\n", err)
		return exitFailure
	}
	return exitOK
}
