// astrai make-model: a synthetic model of any Llama, Qwen 2 or Qwen 3 shape,
// or Mixture-of-Experts Mixtral, Qwen 2 MoE or Qwen 3 MoE one,
// with seeded random weights, for tests and benchmarks: a GGUF file, or a
// Hugging Face folder (--format hf). The vocabulary is made up, or a real
// tokenizer.json (--tokenizer; its tokenizer_config.json, with the chat
// template, beside it), the model's vocabulary then padded to a multiple of 128.
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <memory>

#include "cli/arguments.h"
#include "cli/commands.h"
#include "engine/chat/hf_chat_template.h"
#include "engine/model_files/hf/hf_folder.h"
#include "engine/model_files/load_model.h"
#include "engine/model_files/model_source.h"
#include "engine/model_files/rope_layout.h"
#include "engine/tokenizer/hf_tokenizer.h"
#include "reference/synthetic_model.h"

namespace astrai::cli {

int run_make_model(std::span<const std::string_view> argv) {
  std::string presets;
  for (const auto& p : model_presets()) presets += "\n        " + p.name + ": " + p.description;
  Arguments args("astrai make-model -o OUT [--format gguf|hf] [--arch A] [--tokenizer tokenizer.json] "
                 "[--preset NAME] [--dim N --layers N ...]");
  args.option("-o", "the GGUF file, or the folder (--format hf), to write")
      .option("--format", "gguf, or hf (a Hugging Face folder: config.json, safetensors, tokenizer files)", "gguf")
      .option("--arch", "llama, mistral (llama's layers, MistralForCausalLM in config.json), qwen2 (q/k/v biases), "
                        "qwen3 (q/k norms), or with Mixture-of-Experts layers: mixtral (llama's attention), qwen2moe "
                        "(qwen2's, a shared expert as wide as --hidden) or qwen3moe (qwen3's); gemma3 (Gemma 3's "
                        "block: q/k norms, (1 + w) and sandwich norms, GeGLU, scaled embedding); gpt-oss (q/k/v/o biases, attention "
                        "sinks, experts as wide as --hidden with router and expert biases, the clamped SwiGLU at 7, "
                        "top-k then softmax)",
              "llama")
      .option("--sliding-window",
              "attend over the last N positions: every layer (mistral), five layers of six with RoPE base "
              "10000 on them (gemma3), or every other layer from the first (gpt-oss); 0: none",
              "0")
      .option("--experts", "experts per layer (MoE architectures)", "8")
      .option("--experts-used", "experts each token runs, top-k (MoE architectures)", "2")
      .option("--expert-hidden", "each expert's feed-forward width (qwen2moe, qwen3moe; mixtral's are --hidden wide)")
      .option("--head-dim", "width of a head when not dim / heads (Qwen 3)")
      .option("--tokenizer", "a Hugging Face tokenizer.json with tokenizer_config.json beside it (default: made up)")
      .option("--preset", "a named shape; the options below override its fields:" + presets, "tiny")
      .option("--dim", "residual width")
      .option("--hidden", "feed-forward width")
      .option("--layers", "number of layers")
      .option("--heads", "query heads")
      .option("--kv-heads", "key/value heads")
      .option("--vocab", "vocabulary size (at least 259: specials and byte pieces)")
      .option("--context", "context length")
      .option("--rope-theta", "RoPE base")
      .option("--rope-scaling",
              "Llama 3.1 RoPE scaling with this factor (rope_type llama3, low/high frequency factors 1 and 4, "
              "original context 8192, as Llama 3.1 and 3.2 ship; 0: none)",
              "0")
      .flag("--tie-embeddings", "the output layer is the token embedding (Llama 3.2 1B/3B, small Qwen models)")
      .option("--seed", "seed of the weights", "1")
      .option("--dtype", "how weights are stored: f32, f16, bf16; in GGUF also q8_0, q4_0, q4_k, q6_k", "f32")
      .option("--name", "general.name in the file", "synthetic");
  if (int status = args.parse(argv); status >= 0) return status;
  return run_reporting_errors("make-model", [&] {
    if (!args.has("-o")) throw std::invalid_argument("-o is required");
    ModelConfig config = preset_config(args.get("--preset"));
    auto override_int = [&](const char* option, int& field) {
      if (args.has(option)) field = int(args.get_int(option));
    };
    override_int("--dim", config.dim);
    override_int("--hidden", config.hidden_dim);
    override_int("--layers", config.n_layers);
    override_int("--heads", config.n_heads);
    override_int("--kv-heads", config.n_kv_heads);
    override_int("--vocab", config.vocab_size);
    override_int("--context", config.max_seq_len);
    if (args.has("--rope-theta")) config.rope_theta = float(args.get_double("--rope-theta"));
    override_int("--head-dim", config.explicit_head_dim);
    const std::string arch = args.get("--arch"), format = args.get("--format");
    const std::vector<std::string> arches = {"llama",    "mistral",  "qwen2", "qwen3", "mixtral",
                                             "qwen2moe", "qwen3moe", "gemma3", "gpt-oss"};
    if (std::find(arches.begin(), arches.end(), arch) == arches.end())
      throw std::invalid_argument(
          "--arch must be llama, mistral, qwen2, qwen3, mixtral, qwen2moe, qwen3moe, gemma3 or gpt-oss, got '" + arch +
          "'");
    config.rope_scaling.factor = float(args.get_double("--rope-scaling"));
    if (format != "gguf" && format != "hf") throw std::invalid_argument("--format must be gguf or hf, got '" + format + "'");
    config.options.qkv_bias = arch == "qwen2" || arch == "qwen2moe";
    config.options.qk_norm = arch == "qwen3" || arch == "qwen3moe" || arch == "gemma3";
    if (const int window = int(args.get_int("--sliding-window")); window > 0) {
      if (arch != "mistral" && arch != "gemma3" && arch != "gpt-oss")
        throw std::invalid_argument("--sliding-window is for --arch mistral, gemma3 or gpt-oss");
      config.sliding_window = window;
    }
    if (arch == "gemma3") {  // as Gemma 3 ships: every sixth layer full, the others on base 10000
      config.options.norm_unit_offset = config.options.sandwich_norms = true;
      config.options.gelu_tanh = config.options.scaled_embedding = true;
      config.query_pre_attn_scalar = float(config.head_dim());
      if (config.sliding_window > 0) {
        config.sliding_rope_theta = 10000.0f;
        if (config.n_layers >= 6)
          for (int l = 0; l < config.n_layers; ++l) config.sliding_layers.push_back((l + 1) % 6 != 0);
      }
    }
    if (arch == "gpt-oss") {  // as gpt-oss ships: biases everywhere, sinks, every other layer sliding
      config.options = {.qkv_bias = true, .moe = MoeModule::GptOss, .router_bias = true, .attention_sinks = true,
                        .expert_biases = true, .out_bias = true};
      config.moe = {.n_experts = int(args.get_int("--experts")), .n_experts_used = int(args.get_int("--experts-used")),
                    .expert_hidden_dim = config.hidden_dim, .routing = ExpertRouting::TopKSoftmax,
                    .swiglu_limit = 7.0f};
      if (config.sliding_window > 0 && config.n_layers > 1)
        for (int l = 0; l < config.n_layers; ++l) config.sliding_layers.push_back(l % 2 == 0);
    }
    if (arch == "mixtral" || arch == "qwen2moe" || arch == "qwen3moe") {
      // As the published models route: Mixtral and Qwen 3 MoE renormalise
      // the top-k weights, Qwen 2 MoE does not (what llama.cpp runs too).
      config.options.moe = arch == "mixtral" ? MoeModule::BlockSparseMoe : MoeModule::Mlp;
      config.options.shared_expert = arch == "qwen2moe";
      config.moe.n_experts = int(args.get_int("--experts"));
      config.moe.n_experts_used = int(args.get_int("--experts-used"));
      config.moe.expert_hidden_dim = arch == "mixtral"           ? config.hidden_dim
                                     : args.has("--expert-hidden") ? int(args.get_int("--expert-hidden"))
                                                                   : config.hidden_dim;
      config.moe.norm_topk_prob = arch != "qwen2moe";
      if (config.options.shared_expert) config.moe.shared_expert_hidden_dim = config.hidden_dim;
    }

    std::optional<Tokenizer> tokenizer;
    std::string tokenizer_json, tokenizer_config, chat_template;
    if (args.has("--tokenizer")) {
      tokenizer_json = args.get("--tokenizer");
      tokenizer_config = std::filesystem::path(tokenizer_json).replace_filename("tokenizer_config.json").string();
      auto hf = std::make_shared<const HfTokenizer>(HfTokenizer::load(tokenizer_json));  // parsed once
      if (!args.has("--vocab")) config.vocab_size = (hf->vocab_size() + 127) / 128 * 128;
      tokenizer = Tokenizer::load_hf(std::move(hf), tokenizer_json, tokenizer_config, {}, config.vocab_size);
      chat_template = read_chat_template(tokenizer_config);  // "" for a base model's
    } else {
      tokenizer = make_synthetic_tokenizer(config.vocab_size);
    }
    config.validate();
    const uint64_t seed = uint64_t(args.get_int("--seed"));
    const bool tied = args.has("--tie-embeddings");
    const std::string out = args.get("-o");
    if (format == "hf") {
      if (tokenizer_json.empty()) throw std::invalid_argument("--format hf needs --tokenizer (a tokenizer.json)");
      const std::string dtype = args.get("--dtype");
      const SafetensorsDType st = dtype == "f32" ? SafetensorsDType::F32
                                  : dtype == "f16" ? SafetensorsDType::F16
                                  : dtype == "bf16" ? SafetensorsDType::BF16
                                                    : throw std::invalid_argument("unknown --dtype '" + dtype + "'");
      // Tensor by tensor, as the GGUF below: made, written, freed. Random
      // weights are as good in either RoPE layout; Hugging Face's is rotate-half.
      HfWriteOptions options{.dtype = st};
      if (arch == "mistral") options.architecture = HfArchitecture::Mistral;  // the others follow from the options
      write_hf_folder(out, with_rope_layout(synthetic_model_source(config, seed, tied), RopeLayout::RotateHalf),
                      options);
      const auto dir = std::filesystem::path(out);
      std::filesystem::copy_file(tokenizer_json, dir / "tokenizer.json", std::filesystem::copy_options::overwrite_existing);
      std::filesystem::copy_file(tokenizer_config, dir / "tokenizer_config.json",
                                 std::filesystem::copy_options::overwrite_existing);
    } else {
      // Tensor by tensor: made, written, freed (model_source.h).
      write_gguf_model(out, synthetic_model_source(config, seed, tied), *tokenizer, parse_gguf_dtype(args.get("--dtype")),
                       args.get("--name"), chat_template);
    }
    std::cout << "wrote " << args.get("-o") << " (" << config.describe() << ")\n";
    return 0;
  });
}

}  // namespace astrai::cli
