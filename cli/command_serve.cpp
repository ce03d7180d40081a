// astrai serve: the engine over HTTP (OpenAI and Anthropic chat APIs), on the
// backend --backend picks (cli/backend.h). The listener starts first and the model loads in the
// background, so /health answers at once (model_loaded false until ready).
// Without --model it serves a synthetic model with random weights, created
// once in the cache folder, and says loudly that its output is meaningless.
#include <malloc.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <future>
#include <iostream>
#include <mutex>
#include <thread>

#include "cli/arguments.h"
#include "cli/backend.h"
#include "cli/commands.h"
#include "cli/serve_routing_options.h"
#include "cli/speculative_options.h"
#include "cli/tensor_parallel_args.h"
#include "engine/chat/chat_template.h"
#include "engine/chat_planning/tool_call_formats.h"
#include "engine/model_files/load_model.h"
#include "cli/default_model.h"
#include "server/http_server.h"

namespace astrai::cli {
namespace {

// SIGINT/SIGTERM, or a failed model load, wake the main thread through a
// pipe: a handler may run on any thread (OpenBLAS starts its own before
// main, with signals unblocked), and write() is async-signal-safe.
int stop_pipe[2] = {-1, -1};

extern "C" void on_stop_signal(int) {
  const char byte = 's';
  if (write(stop_pipe[1], &byte, 1) < 0) {
    // Nothing to do: the pipe is full only if a stop is already pending.
  }
}

void install_stop_handlers() {
  if (pipe(stop_pipe) != 0) throw std::runtime_error("cannot create the stop pipe");
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

void wait_for_stop() {
  char byte;
  while (read(stop_pipe[0], &byte, 1) < 0 && errno == EINTR) {
  }
}

// Each client connection takes one file descriptor, idle ones included (they
// hold no thread: server/connection_manager.h). Many systems set a soft limit
// of 1024 open files with a much higher hard limit; the server raises its
// soft limit to the hard one, as nginx and Go programs do, so that a thousand
// idle connections do not make accept() fail for the next client.
void raise_open_file_limit() {
  rlimit limit{};
  if (getrlimit(RLIMIT_NOFILE, &limit) != 0 || limit.rlim_cur >= limit.rlim_max) return;
  limit.rlim_cur = limit.rlim_max;
  if (setrlimit(RLIMIT_NOFILE, &limit) != 0)
    std::cerr << "astrai serve: cannot raise the open-file limit to " << limit.rlim_max << "\n";
}

// glibc raises its mmap threshold to the size of each large block freed (up
// to 32 MiB), after which blocks that size come from the heap arenas, one
// per thread in use, and stay with them when freed. A request body of a few
// MB is read, parsed and rendered by whichever worker serves it, so a stream
// of large requests (oversized prompts, refused) grew the server's RSS by
// tens of MB per arena. A fixed threshold keeps every block of 256 KiB and
// over in its own mapping, returned to the system when freed (fixing it also
// turns off the dynamic adjustment); small blocks are unaffected.
void bound_retained_memory() {
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  mallopt(M_TRIM_THRESHOLD, 512 * 1024);
}

// Joins the HTTP workers. After the engine's shutdown every handler ends
// promptly, but a worker can still be waiting on a client that is idle or
// sends slowly (up to the keep-alive or read timeout). Those get a second to
// finish writing what they have, then their connections are shut down; if a
// worker is still stuck a second later, the process exits without it.
void stop_workers(HttpServer& server) {
  std::promise<void> stopped;
  auto done = stopped.get_future();
  std::thread stopper([&] {
    server.stop();
    stopped.set_value();
  });
  if (done.wait_for(std::chrono::seconds(1)) != std::future_status::ready) {
    server.close_connections();
    if (done.wait_for(std::chrono::seconds(1)) != std::future_status::ready) {
      std::cerr << "astrai serve: a connection is still open after shutdown; exiting without it" << std::endl;
      std::_Exit(0);
    }
  }
  stopper.join();
}

int int_in_range(const Arguments& args, const std::string& name, long long lo, long long hi) {
  const long long n = args.get_int(name);
  if (n < lo || n > hi)
    throw std::invalid_argument(name + " must be between " + std::to_string(lo) + " and " + std::to_string(hi) +
                                ", got " + std::to_string(n));
  return int(n);
}

EngineConfig engine_config(const Arguments& args) {
  EngineConfig config;
  config.scheduler.max_running_tasks = int_in_range(args, "--max-running", 1, 4096);
  config.scheduler.max_waiting_tasks = int_in_range(args, "--max-waiting", 1, 1 << 20);
  config.scheduler.max_tokens_per_step = std::max(config.scheduler.max_tokens_per_step,
                                                  config.scheduler.max_running_tasks);
  const std::string cache = args.get("--cache");
  if (cache == "contiguous")
    config.cache = KVCacheKind::Contiguous;
  else if (cache == "paged")
    config.cache = KVCacheKind::Paged;
  else
    throw std::invalid_argument("--cache must be 'contiguous' or 'paged', got '" + cache + "'");
  return config;
}

ServerOptions server_options(const Arguments& args) {
  ServerOptions options;
  options.host = args.get("--host");
  options.port = int_in_range(args, "--port", 0, 65535);
  options.api_key = args.get("--api-key");
  const long long body = args.get_int("--max-body-bytes");
  if (body < 1) throw std::invalid_argument("--max-body-bytes must be at least 1");
  options.max_body_bytes = size_t(body);
  options.threads = int_in_range(args, "--threads", 1, 4096);
  options.read_timeout = std::chrono::seconds(int_in_range(args, "--read-timeout", 1, 3600));
  options.request_timeout = std::chrono::seconds(int_in_range(args, "--request-timeout", 1, 3600));
  options.keep_alive_timeout = std::chrono::seconds(int_in_range(args, "--keep-alive-timeout", 1, 3600));
  options.responses_store_bytes = size_t(int_in_range(args, "--responses-store-mb", 0, 1 << 20)) << 20;
  options.log_requests = !args.has("--quiet");
  return options;
}

}  // namespace

int run_serve(std::span<const std::string_view> argv) {
  Arguments args("astrai serve [--model M [--tokenizer T]] [--host H] [--port P] [options]");
  args.option("--model",
              "a Hugging Face folder, a GGUF file or a llama2.c checkpoint (default: a synthetic model with random "
              "weights)")
      .option("--tokenizer", "llama2.c tokenizer.bin (default: the GGUF's own, or tok<vocab>.bin beside a checkpoint)")
      .option("--host", "address to listen on", "127.0.0.1")
      .option("--port", "port to listen on (0 = any free port)", "8000")
      .option("--api-key", "require 'Authorization: Bearer KEY' or 'x-api-key: KEY' on every route but /health")
      .option("--max-body-bytes", "larger request bodies get 413", "4194304")
      .option("--chat-template",
              "auto (the model's own Jinja template, else one its metadata looks like), jinja, plain, llama2, chatml, "
              "llama3, or the path of a Jinja template file",
              "auto")
      .option("--tool-call-parser",
              "how tool calls are read from outputs: auto (the family the chat template's markers name), none, "
              "hermes (Qwen 2.5/3, Hermes), llama3 (Llama 3.1-3.3 JSON), mistral or harmony (gpt-oss)",
              "auto")
      .option("--reasoning-parser",
              "auto (split <think>...</think> out of chat outputs when the chat template uses it, or read gpt-oss's "
              "harmony messages when it renders them), think, harmony, or none",
              "auto")
      .option("--generation-config",
              "auto (a folder's generation_config.json sets the default temperature, top_p, top_k and max_tokens (its "
              "max_new_tokens), as in vLLM) "
              "or none (1, 1 and 50 whatever the model)",
              "auto")
      .option("--max-running", "requests generating at once", "16")
      .option("--max-waiting", "requests queued beyond those; more get 503 with Retry-After", "1024")
      .option("--cache", "KV cache: contiguous or paged (the CUDA backend always pages)", "contiguous")
      .option("--backend", "auto (CUDA when built and a GPU is present), reference, or cuda", "auto")
      .option("--cuda-dtype", "the CUDA backend's weights and cache: bf16, or f32 (exact comparisons)", "bf16")
      .option("--threads", "HTTP worker threads (each open stream holds one)", "64")
      .option("--read-timeout", "seconds a request's bytes may stop arriving before it is dropped", "10")
      .option("--request-timeout",
              "seconds a request's head may take to arrive (else the connection is cut), and then its body (else 408)",
              "30")
      .option("--keep-alive-timeout", "seconds an idle connection stays open", "5")
      .option("--responses-store-mb",
              "MiB of responses kept for the Responses API's previous_response_id (least recently used out first); "
              "0 keeps none",
              "64")
      .option("--shutdown-grace",
              "on SIGINT/SIGTERM, seconds running requests may take to finish before they are cancelled", "10")
      .flag("--quiet", "do not log one line per request");
  add_tensor_parallel_options(args);
  add_speculative_options(args);  // --speculative ngram (cli/speculative_options.h)
  add_routing_options(args);  // KV cache events, the cache's size, debug routes (cli/serve_routing_options.h)
  if (int status = args.parse(argv); status >= 0) return status;

  std::string model_path;
  ServerOptions options;
  EngineConfig config;
  SpeculativeChoice speculation;
  std::chrono::seconds grace{};
  KVEventsConfig kv_events;
  const std::string template_name = args.get("--chat-template");
  const std::string backend = args.get("--backend");
  const std::string cuda_dtype = args.get("--cuda-dtype");
  const std::string generation_config = args.get("--generation-config");
  const std::string tool_parser = args.get("--tool-call-parser");
  const std::string reasoning_parser = args.get("--reasoning-parser");
  try {
    if (tool_parser != "auto" && !tool_call_family_named(tool_parser))
      throw std::invalid_argument("--tool-call-parser must be auto, none, hermes, llama3, mistral or harmony, got '" +
                                  tool_parser + "'");
    if (reasoning_parser != "auto" && reasoning_parser != "think" && reasoning_parser != "harmony" &&
        reasoning_parser != "none")
      throw std::invalid_argument("--reasoning-parser must be auto, think, harmony or none, got '" + reasoning_parser +
                                  "'");
    if (generation_config != "auto" && generation_config != "none")
      throw std::invalid_argument("--generation-config must be auto or none, got '" + generation_config + "'");
    options = server_options(args);
    config = engine_config(args);
    speculation = read_speculative_options(args);
    config.scheduler.speculation = speculation.ngram;
    grace = std::chrono::seconds(int_in_range(args, "--shutdown-grace", 0, 3600));
    kv_events = read_routing_options(args, config, options);
    if (template_name != "auto" && template_name != "jinja" && !std::filesystem::is_regular_file(template_name))
      make_chat_template(template_name);  // throws for an unknown name
    if (backend != "auto" && backend != "reference" && backend != "cuda")
      throw std::invalid_argument("--backend must be auto, reference or cuda, got '" + backend + "'");
    if (cuda_dtype != "bf16" && cuda_dtype != "f32")
      throw std::invalid_argument("--cuda-dtype must be bf16 or f32, got '" + cuda_dtype + "'");
    if (args.has("--tokenizer") && !args.has("--model"))
      throw std::invalid_argument("--tokenizer needs --model");
    if (args.has("--model")) {
      model_path = args.get("--model");
      if (!std::filesystem::exists(model_path)) throw std::invalid_argument("model file not found: " + model_path);
    }
    if (!speculation.draft_model.empty() && !std::filesystem::exists(speculation.draft_model))
      throw std::invalid_argument("draft model file not found: " + speculation.draft_model);
  } catch (const std::exception& e) {
    std::cerr << "astrai serve: " << e.what() << "\n";
    return 2;
  }

  try {
    if (model_path.empty()) {
      const auto path = ensure_default_model(default_cache_dir());
      std::cerr << default_model_warning(path);
      model_path = path.string();
    }
    // A tensor-parallel rank other than 0 (started by a launcher, or the
    // first on another machine) runs its part of each step; rank 0 serves.
    // Before the stop handlers: a launcher's SIGTERM ends such a rank.
    TensorParallelOptions tp;
    try {
      tp = tensor_parallel_options(args, model_path, args.get("--tokenizer"));
    } catch (const std::invalid_argument& e) {
      std::cerr << "astrai serve: " << e.what() << "\n";
      return 2;
    }
    if (const auto status = run_rank_unless_first(tp, model_path, args.get("--tokenizer"))) return *status;
    install_stop_handlers();
    raise_open_file_limit();
    bound_retained_memory();
    HttpServer server(options);
    const int port = server.start();
    std::cerr << "astrai serve: listening on http://" << options.host << ":" << port << " (loading " << model_path
              << ")" << std::endl;

    std::mutex load_mutex;
    std::string load_error;
    std::thread loader([&] {
      try {
        OpenedModel model = open_model(model_path, args.get("--tokenizer"));
        std::optional<OpenedModel> draft = open_draft_model(speculation);
        const std::string shape = model.weights.config.describe();
        const bool has_generation_config = model.generation.has_value();
        std::string description, note;
        const EngineMaker engine_maker = [&](const ModelSource& weights, std::shared_ptr<const Tokenizer> tokenizer) {
          if (draft) check_draft_vocabulary(*tokenizer, weights.config.vocab_size, *draft);
          return make_engine(weights, std::move(tokenizer), config, backend, &description, cuda_dtype, tp,
                             {draft ? &draft->weights : nullptr, speculation.tokens});
        };
        auto served = make_served_model(std::move(model), engine_maker, template_name, &note);
        draft.reset();  // closes its files: the backend holds what it read
        if (!note.empty()) std::cerr << "astrai serve: " << note << std::endl;
        served->kv_events = start_kv_events(kv_events, *served->engine);
        if (served->kv_events)
          std::cerr << "astrai serve: KV cache events on " << kv_events.endpoint << " (topic '" << kv_events.topic
                    << "', blocks of " << served->kv_events->stamp().block_size << " tokens, medium "
                    << served->kv_events->stamp().medium << ")" << std::endl;
        if (generation_config != "auto") {
          served->default_sampling = SamplingParams{};
          served->default_max_tokens = std::nullopt;
        }
        if (tool_parser != "auto") served->tool_call_family = *tool_call_family_named(tool_parser);
        if (reasoning_parser != "auto") {
          served->split_reasoning = reasoning_parser == "think";
          served->harmony = reasoning_parser == "harmony";
        }
        std::cerr << "astrai serve: tool calls read as " << to_string(served->tool_call_family) << ", reasoning "
                  << (served->harmony           ? "read from harmony messages (analysis channel)"
                      : served->split_reasoning ? "split out (<think>)"
                                                : "not split")
                  << std::endl;
        const SamplingParams& d = served->default_sampling;
        std::cerr << "astrai serve: default sampling: temperature " << d.temperature << ", top_p " << d.top_p
                  << ", top_k " << d.top_k
                  << (served->default_max_tokens ? ", max_tokens " + std::to_string(*served->default_max_tokens) : "")
                  << (generation_config == "auto" && has_generation_config ? " (generation_config.json)" : "")
                  << std::endl;
        std::cerr << "astrai serve: model '" << served->name << "' ready (" << shape << ", chat template "
                  << served->chat_template->name() << ", " << description << ")" << std::endl;
        server.set_model(std::move(served));
      } catch (const std::exception& e) {
        std::lock_guard lock(load_mutex);
        load_error = e.what();
        on_stop_signal(0);  // wakes the main thread
      }
    });

    wait_for_stop();
    {
      std::lock_guard lock(load_mutex);
      if (load_error.empty())
        std::cerr << "astrai serve: stopping: no new connections; running requests have " << grace.count()
                  << " s to finish" << std::endl;
    }
    // Graceful shutdown: stop accepting at once, let running requests finish
    // within the grace period, cancel the rest (their clients get an error
    // response or event), then wait for the workers to write those out.
    server.stop_accepting();
    loader.join();
    if (auto model = server.model()) model->engine->shutdown(grace);
    stop_workers(server);
    std::lock_guard lock(load_mutex);
    if (!load_error.empty()) {
      std::cerr << "astrai serve: cannot serve the model: " << load_error << "\n";
      return 1;
    }
    std::cerr << "astrai serve: stopped\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "astrai serve: " << e.what() << "\n";
    return 1;
  }
}

}  // namespace astrai::cli
