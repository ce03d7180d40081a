// The subcommands of the `astrai` program. Each takes the arguments after its
// name, prints its own usage on --help or bad arguments, and returns the exit
// status (0 ok, 1 runtime failure, 2 usage error).
#pragma once

#include <span>
#include <string_view>

namespace astrai::cli {

int run_generate(std::span<const std::string_view> args);
int run_tokenize(std::span<const std::string_view> args);
int run_chat_template(std::span<const std::string_view> args);
int run_convert(std::span<const std::string_view> args);
int run_make_model(std::span<const std::string_view> args);
int run_serve(std::span<const std::string_view> args);
int run_rank_worker(std::span<const std::string_view> args);  // cli/tensor_parallel_args.cpp

}  // namespace astrai::cli
