// The harness wire protocol: one JSON object per line over a unix stream socket, one request
// and one response per connection. The client is the `harness` executable in an agent's
// workspace; the server runs inside the orchestrator.
#pragma once

#include "util/error.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace temper::agent {

inline constexpr int kHarnessProtocolVersion = 1;

// Student ops: "probe", "submit", "escalate", "status".
// Teacher ops (black-box reference): "ref-time", "ref-profile", "ref-disasm", "status".
struct HarnessRequest {
  std::string op;
  std::filesystem::path file;              // candidate file, relative to the workspace or absolute inside it
  std::optional<int64_t> case_id;          // --case N
  // probe only, instead of a case: several cases at once (--cases 2,15,18), each timed apart;
  // on a cluster they run as jobs side by side (a tuner's whole successive-halving rung).
  std::vector<int64_t> cases;
  std::vector<std::string> grid;           // each "NAME=v1,v2,..."
  // probe only, instead of a grid: explicit variants, each NAME -> value for the kernel's
  // knobs (JSON: [{"UNROLL":"2","NT_STORES":"1"}, ...]; numbers are taken as their text).
  std::vector<std::map<std::string, std::string>> variants;
  std::string text;                        // escalate reason
  nlohmann::json to_json() const;
  static Expected<HarnessRequest> from_json(const nlohmann::json& j);
};

struct HarnessResponse {
  bool ok = false;
  std::string message;                     // human-readable summary the client prints
  nlohmann::json body;                     // machine-readable details (report excerpt, verdicts)
  nlohmann::json to_json() const;
  static Expected<HarnessResponse> from_json(const nlohmann::json& j);
};

// Called on the server thread, one request at a time.
using HarnessHandler = std::function<HarnessResponse(const HarnessRequest&)>;

// Listens on `socket_path` until stopped or destroyed. Requests are served sequentially.
class HarnessServer {
 public:
  static Expected<std::unique_ptr<HarnessServer>> start(const std::filesystem::path& socket_path,
                                                        HarnessHandler handler);
  virtual ~HarnessServer() = default;
  virtual void stop() = 0;
  virtual const std::filesystem::path& socket_path() const = 0;
};

// Checks one probe grid axis "NAME=v1,v2,...": NAME an identifier, no value empty.
Status validate_grid_axis(const std::string& axis);

// Checks one explicit variant: non-empty, names identifiers, values non-empty without whitespace.
Status validate_variant(const std::map<std::string, std::string>& variant);

// Parses `--variant NAME=v,NAME2=w` into one variant (then validated as above).
Expected<std::map<std::string, std::string>> parse_variant(const std::string& text);

// One request from a client (used by the `harness` executable and by built-in drivers).
Expected<HarnessResponse> harness_call(const std::filesystem::path& socket_path,
                                       const HarnessRequest& request);

} // namespace temper::agent
