// A whole file as a string: what every reader of a small text or JSON file
// (tokenizer.json, tokenizer_config.json, config.json, a chat template, a
// llama2.c tokenizer.bin) starts with. Model weights are mapped instead
// (engine/model_files/mapped_file.h).
#pragma once

#include <string>

namespace astrai {

// The bytes of the file at `path`. `label` names the file in errors (a path,
// or "tokenizer file 'PATH'"): throws std::runtime_error "<label>: cannot
// open" or "<label>: read error".
std::string read_whole_file(const std::string& path, const std::string& label);

}  // namespace astrai
