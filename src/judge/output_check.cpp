#include "judge/output_check.h"

#include "core/index_check.h"
#include "judge/common.h"
#include "util/hash.h"

#include <fmt/format.h>

#include <algorithm>

namespace temper::judge {

namespace {

const core::TensorDecl* declared_output(const core::Operator& op, const std::string& name) {
  // A tensor-list output's elements come back as NAME[k].
  const std::string base = name.substr(0, name.find('['));
  for (const auto& o : op.outputs)
    if (o.name == base) return &o;
  return nullptr;
}

// The flat input tensor an index_gather rule names (a plain tensor input), or null.
const core::HostTensor* input_named(const core::Task& task, const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                    const std::string& name) {
  const auto slots = c.input_slots();
  for (size_t k = 0; k < task.op.inputs.size() && k < slots.size(); ++k) {
    if (task.op.inputs[k].name != name || slots[k].count != 1) continue;
    return slots[k].first < inputs.size() ? &inputs[slots[k].first] : nullptr;
  }
  return nullptr;
}

core::Comparison not_compared(std::string standard, std::string reason, bool passed) {
  core::Comparison c;
  c.passed = passed;
  c.standard = std::move(standard);
  c.reason = std::move(reason);
  return c;
}

core::Comparison index_gather(const core::Task& task, const core::Case& c, const std::vector<core::HostTensor>& inputs,
                              const core::IndexGather& rule, const GoldenResult& gold, const std::vector<std::vector<double>>& got,
                              size_t k) {
  const core::HostTensor* input = input_named(task, c, inputs, rule.input);
  if (!input) return not_compared("index_gather", fmt::format("the input '{}' the index rule names is not in this case", rule.input), false);
  const core::AttrValue* dim = c.attr(rule.dim_attr);
  if (!dim) return not_compared("index_gather", fmt::format("the case gives no value for attr '{}'", rule.dim_attr), false);
  std::vector<double> in(static_cast<size_t>(input->spec.numel()));
  for (size_t i = 0; i < in.size(); ++i) in[i] = input->at(i);
  core::IndexGatherView view;
  view.input_shape = input->spec.shape;
  view.input = in.data();
  view.dim = dim->i;
  if (!rule.keepdim_attr.empty())
    if (const core::AttrValue* keep = c.attr(rule.keepdim_attr)) view.keepdim = keep->i != 0;
  view.index_shape = gold.outputs[k].shape;
  view.indices = got[k].data();
  if (!rule.value_output.empty()) {
    auto it = std::find_if(gold.outputs.begin(), gold.outputs.end(), [&](const GoldenOutput& g) { return g.name == rule.value_output; });
    if (it == gold.outputs.end()) return not_compared("index_gather", fmt::format("no value output '{}'", rule.value_output), false);
    view.values = got[static_cast<size_t>(it - gold.outputs.begin())].data();
  }
  return core::check_index_gather(rule, view);
}

} // namespace

std::vector<OutputCheck> check_outputs(const core::Task& task, const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                       const GoldenResult& gold, const GoldenResult* lowp, const std::vector<std::vector<double>>& got) {
  std::vector<OutputCheck> out;
  out.reserve(gold.outputs.size());
  for (size_t k = 0; k < gold.outputs.size(); ++k) {
    const GoldenOutput& g = gold.outputs[k];
    const core::TensorDecl* decl = declared_output(task.op, g.name);
    if (decl && !decl->compare) {
      // The official checker does not compare this output element by element.
      out.push_back({g.name, decl->index_gather ? index_gather(task, c, inputs, *decl->index_gather, gold, got, k)
                                                : not_compared("not_compared", "", true)});
      continue;
    }
    core::OutputView view{g.dtype, g.shape, got[k].data(), g.values.data(),
                          lowp && k < lowp->outputs.size() ? lowp->outputs[k].values.data() : nullptr};
    out.push_back({g.name, core::compare_output(task.tolerance_for(g.name), view)});
  }
  return out;
}

Expected<std::vector<OutputCheck>> check_outputs_lowp_on_demand(
    const core::Task& task, const core::Case& c, const std::vector<core::HostTensor>& inputs, const GoldenResult& gold,
    std::optional<GoldenResult>& lowp, const std::vector<std::vector<double>>& got,
    const std::function<Expected<GoldenResult>()>& compute_lowp) {
  std::vector<OutputCheck> checks = check_outputs(task, c, inputs, gold, lowp ? &*lowp : nullptr, got);
  const bool wanted = std::any_of(checks.begin(), checks.end(), [](const OutputCheck& k) { return k.cmp.wants_lowp; });
  if (lowp || !wanted || !needs_low_precision(task, gold.outputs)) return checks;
  TEMPER_TRY_ASSIGN(lowp, compute_lowp());
  return check_outputs(task, c, inputs, gold, &*lowp, got);
}

std::string ComparedOutputs::key(const core::Operator& op, const core::Case& c, const std::vector<core::HostTensor>& inputs,
                                 const std::vector<unsigned char>& output_bytes) {
  util::Hasher h;
  h.add("temper compared outputs, version 1").add(op.name).add(c.to_json().dump());
  for (const auto& t : inputs) {
    h.add(t.spec.name).add(static_cast<int64_t>(t.spec.bytes()));
    h.add_raw(t.buffer.data(), t.spec.bytes());
  }
  h.add(static_cast<int64_t>(output_bytes.size()));
  h.add_raw(output_bytes.data(), output_bytes.size());
  return h.hex();
}

std::optional<std::vector<OutputCheck>> ComparedOutputs::find(const std::string& key) const {
  std::lock_guard lock(m_mu);
  auto it = m_checks.find(key);
  if (it == m_checks.end()) return std::nullopt;
  ++m_hits;
  return it->second;
}

void ComparedOutputs::insert(const std::string& key, const std::vector<OutputCheck>& checks) {
  std::lock_guard lock(m_mu);
  m_checks.emplace(key, checks);
}

int ComparedOutputs::hits() const {
  std::lock_guard lock(m_mu);
  return m_hits;
}

} // namespace temper::judge
