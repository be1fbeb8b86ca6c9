// Bindings for the NIST STS (native/sts). Conversion and dispatch only.
//   stsRunBattery(data, options, onProgress?) -> {promise, cancel()}
//       data: Uint8Array of packed bits, MSB first (raw bytes are the same thing); it must
//       not be modified until the promise settles (it is read in place, not copied).
//       options: {nbits, streams, bitsPerStream, params, tests: string[], threads, alpha,
//       summarize, repetitionCheck}. Runs on the libuv pool (its own threads inside); progress arrives on
//       the event loop as onProgress(completed, total); cancel() stops between sequences
//       and the promise rejects with an Error whose code is 'ABORT_ERR'.
//       Resolves to {streams, bitsPerStream, tests, columns, pValues (Float64Array,
//       row-major, NaN = not applicable), notes, fingerprints, periodBits, summary?}.
//   stsSummarize(columns, tests, pValues, streams, fingerprints, alpha) -> summary
//   stsRunTest(name, data, nbits, params) -> {pValues: (number|null)[], note}
//   stsSubTests(name, params) -> string[] (sub-test labels), stsAperiodicTemplates(m)
//   stsTestNames, stsCountOnes(data) (the popcount ceiling of the benchmark)
#include <napi.h>

#include <atomic>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/cpu.h"
#include "napi/registry.h"
#include "sts/battery.h"
#include "sts/sts.h"

namespace {

using qe::sts::BatteryOptions;
using qe::sts::BatteryResult;
using qe::sts::BatterySummary;
using qe::sts::Fingerprint;
using qe::sts::Params;
using qe::sts::SubTest;
using qe::sts::TestId;

Napi::Uint8Array bytes_arg(const Napi::Env& env, const Napi::Value& v, const char* fn) {
  if (!v.IsTypedArray() || v.As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, std::string(fn) + ": data must be a Uint8Array or Buffer");
  return v.As<Napi::Uint8Array>();
}

// A non-negative integer option; `fallback` when absent.
size_t size_option(const Napi::Env& env, const Napi::Object& o, const char* key, size_t fallback) {
  if (!o.Has(key)) return fallback;
  const Napi::Value v = o.Get(key);
  if (v.IsUndefined() || v.IsNull()) return fallback;
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(key) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d != std::floor(d) || d > 9007199254740991.0)
    throw Napi::RangeError::New(env, std::string(key) + " must be a non-negative integer");
  return static_cast<size_t>(d);
}

Params params_from(const Napi::Env& env, const Napi::Value& v) {
  Params p;
  if (!v.IsObject()) return p;
  const Napi::Object o = v.As<Napi::Object>();
  auto get = [&](const char* key, int& field) {
    const size_t value = size_option(env, o, key, static_cast<size_t>(field));
    if (value > 1u << 30) throw Napi::RangeError::New(env, std::string(key) + " is too large");
    field = static_cast<int>(value);
  };
  get("block_frequency_M", p.block_frequency_M);
  get("non_overlapping_template_m", p.non_overlapping_template_m);
  get("overlapping_template_m", p.overlapping_template_m);
  get("approximate_entropy_m", p.approximate_entropy_m);
  get("serial_m", p.serial_m);
  get("linear_complexity_M", p.linear_complexity_M);
  return p;
}

TestId test_from(const Napi::Env& env, const Napi::Value& v) {
  if (!v.IsString()) throw Napi::TypeError::New(env, "test names must be strings");
  try {
    return qe::sts::test_id_from_name(v.As<Napi::String>().Utf8Value());
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
}

std::vector<TestId> tests_from(const Napi::Env& env, const Napi::Value& v) {
  std::vector<TestId> ids;
  if (v.IsUndefined() || v.IsNull()) return ids;
  if (!v.IsArray()) throw Napi::TypeError::New(env, "tests must be an array of test names");
  const Napi::Array a = v.As<Napi::Array>();
  for (uint32_t i = 0; i < a.Length(); ++i) ids.push_back(test_from(env, a.Get(i)));
  return ids;
}

Napi::Value number_or_null(const Napi::Env& env, double d) {
  return std::isnan(d) ? env.Null() : Napi::Number::New(env, d);
}

std::string hex(const Fingerprint& f) {
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(f.hi),
                static_cast<unsigned long long>(f.lo));
  return buf;
}

Fingerprint fingerprint_from_hex(const Napi::Env& env, const std::string& s) {
  if (s.size() != 32 || s.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw Napi::TypeError::New(env, "fingerprints must be 32 lowercase hex digits");
  Fingerprint f;
  f.hi = std::stoull(s.substr(0, 16), nullptr, 16);
  f.lo = std::stoull(s.substr(16), nullptr, 16);
  return f;
}

const char* test_name(TestId t) { return qe::sts::kTestNames[static_cast<int>(t)]; }

Napi::Array columns_to_js(const Napi::Env& env, const std::vector<SubTest>& columns) {
  Napi::Array out = Napi::Array::New(env, columns.size());
  for (uint32_t c = 0; c < columns.size(); ++c) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("test", test_name(columns[c].test));
    o.Set("index", columns[c].index);
    o.Set("label", columns[c].label);
    out.Set(c, o);
  }
  return out;
}

std::vector<SubTest> columns_from(const Napi::Env& env, const Napi::Value& v) {
  if (!v.IsArray()) throw Napi::TypeError::New(env, "columns must be an array");
  const Napi::Array a = v.As<Napi::Array>();
  std::vector<SubTest> cols;
  for (uint32_t i = 0; i < a.Length(); ++i) {
    const Napi::Value e = a.Get(i);
    if (!e.IsObject()) throw Napi::TypeError::New(env, "columns must be objects");
    const Napi::Object o = e.As<Napi::Object>();
    cols.push_back({test_from(env, o.Get("test")), static_cast<int>(size_option(env, o, "index", 0)),
                    o.Get("label").IsString() ? o.Get("label").As<Napi::String>().Utf8Value() : ""});
  }
  return cols;
}

const char* verdict_name(qe::sts::UniformityVerdict v) {
  switch (v) {
    case qe::sts::UniformityVerdict::passed: return "passed";
    case qe::sts::UniformityVerdict::failed: return "failed";
    case qe::sts::UniformityVerdict::excluded: return "excluded";
  }
  return "excluded";
}

Napi::Object summary_to_js(const Napi::Env& env, const BatterySummary& s) {
  Napi::Object out = Napi::Object::New(env);
  out.Set("streams", static_cast<double>(s.streams));
  out.Set("alpha", s.alpha);
  Napi::Array subs = Napi::Array::New(env, s.sub_tests.size());
  for (uint32_t i = 0; i < s.sub_tests.size(); ++i) {
    const qe::sts::SubTestSummary& st = s.sub_tests[i];
    Napi::Object o = Napi::Object::New(env);
    Napi::Array h = Napi::Array::New(env, 10);
    for (uint32_t b = 0; b < 10; ++b) h.Set(b, static_cast<double>(st.histogram[b]));
    o.Set("histogram", h);
    o.Set("sampleSize", static_cast<double>(st.sample_size));
    o.Set("passed", static_cast<double>(st.passed));
    o.Set("uniformityP", number_or_null(env, st.uniformity_p));
    o.Set("uniformityAssessed", st.uniformity_assessed);
    o.Set("uniformityOk", st.uniformity_ok);
    o.Set("proportionOk", st.proportion_ok);
    subs.Set(i, o);
  }
  out.Set("subTests", subs);
  Napi::Array uni = Napi::Array::New(env, s.uniformity.size());
  for (uint32_t i = 0; i < s.uniformity.size(); ++i) {
    Napi::Object o = Napi::Object::New(env);
    o.Set("test", test_name(s.uniformity[i].test));
    o.Set("verdict", verdict_name(s.uniformity[i].verdict));
    o.Set("reason", s.uniformity[i].reason);
    uni.Set(i, o);
  }
  out.Set("uniformity", uni);
  const qe::sts::Criteria& c = s.criteria;
  Napi::Object cr = Napi::Object::New(env);
  cr.Set("tests_passed", c.tests_passed);
  cr.Set("nist_all_passed", c.nist_all_passed);
  cr.Set("nist_fails", static_cast<double>(c.nist_fails));
  cr.Set("nist_passes", static_cast<double>(c.nist_passes));
  cr.Set("nist_success_rate", number_or_null(env, c.nist_success_rate));
  cr.Set("nist_min_pass_proportion", number_or_null(env, c.min_pass_proportion));
  cr.Set("uniformity_all_passed", c.uniformity_all_passed);
  cr.Set("uniformity_fails", static_cast<double>(c.uniformity_fails));
  cr.Set("uniformity_passes", static_cast<double>(c.uniformity_passes));
  cr.Set("uniformity_excluded", static_cast<double>(c.uniformity_excluded));
  cr.Set("uniformity_success_rate", number_or_null(env, c.uniformity_success_rate));
  cr.Set("strictly_failing", c.strictly_failing);
  cr.Set("loosely_failing", c.loosely_failing);
  out.Set("criteria", cr);
  out.Set("proportionFlags", static_cast<double>(s.proportion_flags));
  out.Set("uniformityFlags", static_cast<double>(s.uniformity_flags));
  Napi::Object rep = Napi::Object::New(env);
  Napi::Array pairs = Napi::Array::New(env, s.repetition.identical.size());
  for (uint32_t i = 0; i < s.repetition.identical.size(); ++i) {
    Napi::Array p = Napi::Array::New(env, 2);
    p.Set(0u, static_cast<double>(s.repetition.identical[i].first));
    p.Set(1u, static_cast<double>(s.repetition.identical[i].second));
    pairs.Set(i, p);
  }
  rep.Set("identical", pairs);
  rep.Set("periodBits", static_cast<double>(s.repetition.period_bits));
  out.Set("repetition", rep);
  return out;
}

struct Progress {
  size_t done, total;
};

class BatteryWorker : public Napi::AsyncWorker {
 public:
  BatteryWorker(Napi::Env env, Napi::Uint8Array data, size_t nbits, BatteryOptions options,
                std::shared_ptr<std::atomic<bool>> cancel, Napi::Function on_progress)
      : Napi::AsyncWorker(env, "qentropy:sts"),
        deferred_(Napi::Promise::Deferred::New(env)),
        data_ref_(Napi::Persistent(data)),
        bytes_(data.Data()),
        nbits_(nbits),
        options_(std::move(options)),
        cancel_(std::move(cancel)) {
    options_.cancel = cancel_.get();
    if (!on_progress.IsEmpty()) {
      progress_ = Napi::ThreadSafeFunction::New(env, on_progress, "qentropy:sts-progress", 0, 1);
      has_progress_ = true;
      options_.progress = [this](size_t done, size_t total) {
        // Non-blocking: a slow event loop drops nothing (the queue is unbounded) and never
        // stalls the workers.
        auto* p = new Progress{done, total};
        if (progress_.NonBlockingCall(p, [](Napi::Env env, Napi::Function fn, Progress* d) {
              const Progress v = *d;
              delete d;
              if (env != nullptr && !fn.IsEmpty()) fn.Call({Napi::Number::New(env, static_cast<double>(v.done)),
                                                            Napi::Number::New(env, static_cast<double>(v.total))});
            }) != napi_ok)
          delete p;
      };
    }
  }

  Napi::Promise promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    try {
      result_ = qe::sts::run_battery(bytes_, nbits_, options_);
    } catch (const qe::sts::BatteryCancelled& e) {
      cancelled_ = true;
      SetError(e.what());
    } catch (const std::exception& e) {
      SetError(e.what());
    }
    if (has_progress_) progress_.Release();
  }

  void OnOK() override {
    Napi::Env env = Env();
    const BatteryResult& r = result_;
    Napi::Object out = Napi::Object::New(env);
    out.Set("streams", static_cast<double>(r.streams));
    out.Set("bitsPerStream", static_cast<double>(r.bits_per_stream));
    Napi::Array tests = Napi::Array::New(env, r.tests.size());
    for (uint32_t i = 0; i < r.tests.size(); ++i) tests.Set(i, test_name(r.tests[i]));
    out.Set("tests", tests);
    out.Set("columns", columns_to_js(env, r.columns));
    Napi::Float64Array pv = Napi::Float64Array::New(env, r.p_values.size());
    if (!r.p_values.empty()) std::memcpy(pv.Data(), r.p_values.data(), r.p_values.size() * sizeof(double));
    out.Set("pValues", pv);
    Napi::Array notes = Napi::Array::New(env, r.notes.size());
    for (uint32_t s = 0; s < r.notes.size(); ++s) {
      Napi::Array row = Napi::Array::New(env, r.notes[s].size());
      for (uint32_t t = 0; t < r.notes[s].size(); ++t) row.Set(t, r.notes[s][t]);
      notes.Set(s, row);
    }
    out.Set("notes", notes);
    Napi::Array fps = Napi::Array::New(env, r.fingerprints.size());
    for (uint32_t s = 0; s < r.fingerprints.size(); ++s) fps.Set(s, hex(r.fingerprints[s]));
    out.Set("fingerprints", fps);
    out.Set("periodBits", static_cast<double>(r.period_bits));
    if (options_.summarize) out.Set("summary", summary_to_js(env, r.summary));
    data_ref_.Reset();
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& e) override {
    Napi::Env env = Env();
    Napi::Error err = Napi::Error::New(env, e.Message());
    if (cancelled_) {
      err.Set("name", Napi::String::New(env, "AbortError"));
      err.Set("code", Napi::String::New(env, "ABORT_ERR"));
    }
    data_ref_.Reset();
    deferred_.Reject(err.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Uint8Array> data_ref_;
  const uint8_t* bytes_;
  size_t nbits_;
  BatteryOptions options_;
  std::shared_ptr<std::atomic<bool>> cancel_;
  Napi::ThreadSafeFunction progress_;
  bool has_progress_ = false;
  bool cancelled_ = false;
  BatteryResult result_;
};

Napi::Value RunBattery(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const Napi::Uint8Array data = bytes_arg(env, info[0], "stsRunBattery");
  const Napi::Object o = info.Length() > 1 && info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
  const size_t available = data.ElementLength() * 8;
  const size_t nbits = size_option(env, o, "nbits", available);
  if (nbits > available)
    throw Napi::RangeError::New(env, "stsRunBattery: nbits " + std::to_string(nbits) + " exceeds the " +
                                         std::to_string(available) + " bits of data");
  BatteryOptions opt;
  opt.streams = size_option(env, o, "streams", 1);
  opt.bits_per_stream = size_option(env, o, "bitsPerStream", 0);
  opt.params = params_from(env, o.Get("params"));
  opt.tests = tests_from(env, o.Get("tests"));
  opt.threads = static_cast<unsigned>(std::min<size_t>(size_option(env, o, "threads", 1), 1024));
  if (o.Has("alpha") && o.Get("alpha").IsNumber()) opt.alpha = o.Get("alpha").As<Napi::Number>().DoubleValue();
  if (o.Has("summarize") && !o.Get("summarize").IsUndefined()) opt.summarize = o.Get("summarize").ToBoolean();
  if (o.Has("repetitionCheck") && !o.Get("repetitionCheck").IsUndefined())
    opt.repetition_check = o.Get("repetitionCheck").ToBoolean();
  // Argument errors surface synchronously, before any work is queued.
  if (opt.streams == 0) throw Napi::RangeError::New(env, "streams must be at least 1");
  const size_t n = opt.bits_per_stream ? opt.bits_per_stream : nbits / opt.streams;
  if (n == 0 || n > nbits / opt.streams)
    throw Napi::RangeError::New(env, std::to_string(opt.streams) + " streams of " +
                                         std::to_string(opt.bits_per_stream) + " bits do not fit in " +
                                         std::to_string(nbits) + " bits");
  try {
    (void)qe::sts::sub_tests(TestId::non_overlapping_template, opt.params);
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
  Napi::Function on_progress;
  if (info.Length() > 2 && info[2].IsFunction()) on_progress = info[2].As<Napi::Function>();

  auto cancel = std::make_shared<std::atomic<bool>>(false);
  auto* worker = new BatteryWorker(env, data, nbits, std::move(opt), cancel, on_progress);
  Napi::Object handle = Napi::Object::New(env);
  handle.Set("promise", worker->promise());
  handle.Set("cancel", Napi::Function::New(
                           env, [cancel](const Napi::CallbackInfo& ci) -> Napi::Value {
                             cancel->store(true);
                             return ci.Env().Undefined();
                           },
                           "cancel"));
  worker->Queue();
  return handle;
}

Napi::Value Summarize(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const std::vector<SubTest> columns = columns_from(env, info[0]);
  const std::vector<TestId> tests = tests_from(env, info[1]);
  if (!info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_float64_array)
    throw Napi::TypeError::New(env, "stsSummarize: pValues must be a Float64Array");
  const Napi::Float64Array pv = info[2].As<Napi::Float64Array>();
  if (!info[3].IsNumber()) throw Napi::TypeError::New(env, "stsSummarize: streams must be a number");
  const auto streams = static_cast<size_t>(info[3].As<Napi::Number>().Int64Value());
  if (pv.ElementLength() != streams * columns.size())
    throw Napi::RangeError::New(env, "stsSummarize: pValues must hold streams x columns values");
  std::vector<Fingerprint> fps;
  if (info.Length() > 4 && info[4].IsArray()) {
    const Napi::Array a = info[4].As<Napi::Array>();
    for (uint32_t i = 0; i < a.Length(); ++i) fps.push_back(fingerprint_from_hex(env, a.Get(i).ToString().Utf8Value()));
  }
  const double alpha = info.Length() > 5 && info[5].IsNumber() ? info[5].As<Napi::Number>().DoubleValue() : qe::sts::kAlpha;
  return summary_to_js(env, qe::sts::summarize(columns, tests, pv.Data(), streams, fps, alpha));
}

Napi::Value RunTest(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const TestId id = test_from(env, info[0]);
  const Napi::Uint8Array data = bytes_arg(env, info[1], "stsRunTest");
  const size_t available = data.ElementLength() * 8;
  size_t nbits = available;
  if (info.Length() > 2 && info[2].IsNumber()) nbits = static_cast<size_t>(info[2].As<Napi::Number>().Int64Value());
  if (nbits > available) throw Napi::RangeError::New(env, "stsRunTest: nbits exceeds the data");
  const Params params = params_from(env, info.Length() > 3 ? info[3] : env.Undefined());
  try {
    const qe::sts::Bits bits = qe::sts::extract_bits(data.Data(), 0, nbits);
    const qe::sts::TestResult r = qe::sts::run_test(id, bits, params);
    Napi::Object out = Napi::Object::New(env);
    Napi::Array pv = Napi::Array::New(env, r.p_values.size());
    for (uint32_t i = 0; i < r.p_values.size(); ++i) pv.Set(i, number_or_null(env, r.p_values[i]));
    out.Set("pValues", pv);
    out.Set("note", r.note);
    return out;
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
}

Napi::Value SubTests(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const TestId id = test_from(env, info[0]);
  const Params params = params_from(env, info.Length() > 1 ? info[1] : env.Undefined());
  try {
    const std::vector<SubTest> subs = qe::sts::sub_tests(id, params);
    Napi::Array out = Napi::Array::New(env, subs.size());
    for (uint32_t i = 0; i < subs.size(); ++i) out.Set(i, subs[i].label);
    return out;
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
}

Napi::Value AperiodicTemplates(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) throw Napi::TypeError::New(env, "stsAperiodicTemplates: m must be a number");
  try {
    const std::vector<uint32_t> t = qe::sts::aperiodic_templates(info[0].As<Napi::Number>().Int32Value());
    Napi::Array out = Napi::Array::New(env, t.size());
    for (uint32_t i = 0; i < t.size(); ++i) out.Set(i, t[i]);
    return out;
  } catch (const std::invalid_argument& e) {
    throw Napi::RangeError::New(env, e.what());
  }
}

// Compiled for POPCNT and for plain x86-64 like the tests' own bit-counting loops, so the
// benchmark's ceiling is the same instruction the tests use.
QE_POPCNT_CLONES uint64_t count_ones(const uint8_t* p, size_t n) {
  uint64_t ones = 0;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, p + i, 8);
    ones += static_cast<uint64_t>(std::popcount(w));
  }
  for (; i < n; ++i) ones += static_cast<uint64_t>(std::popcount(static_cast<unsigned>(p[i])));
  return ones;
}

Napi::Value CountOnes(const Napi::CallbackInfo& info) {
  const Napi::Uint8Array data = bytes_arg(info.Env(), info[0], "stsCountOnes");
  return Napi::Number::New(info.Env(), static_cast<double>(count_ones(data.Data(), data.ElementLength())));
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("stsRunBattery", Napi::Function::New(env, RunBattery, "stsRunBattery"));
  exports.Set("stsSummarize", Napi::Function::New(env, Summarize, "stsSummarize"));
  exports.Set("stsRunTest", Napi::Function::New(env, RunTest, "stsRunTest"));
  exports.Set("stsSubTests", Napi::Function::New(env, SubTests, "stsSubTests"));
  exports.Set("stsAperiodicTemplates", Napi::Function::New(env, AperiodicTemplates, "stsAperiodicTemplates"));
  exports.Set("stsCountOnes", Napi::Function::New(env, CountOnes, "stsCountOnes"));
  Napi::Array names = Napi::Array::New(env, qe::sts::kTestCount);
  for (uint32_t i = 0; i < static_cast<uint32_t>(qe::sts::kTestCount); ++i) names.Set(i, qe::sts::kTestNames[i]);
  exports.Set("stsTestNames", names);
});

}  // namespace
