// Bindings for the SP 800-90B entropy assessment (native/ea). Conversion and dispatch only.
//   eaAssess(data, options, onProgress?) -> Promise<result>
//       data: Uint8Array, one sample per byte (read in place: it must not change until the
//       promise settles). options: {bitsPerSymbol (0 = infer), nonIid, iid, conditioned,
//       truncate, threads, shuffles, fullPermutationTest, restartEntropy (assess data as a 1000x1000 restart
//       matrix against this H_I)}. Runs on the libuv pool with its own threads inside;
//       onProgress(done, total) arrives on the event loop. Bad input rejects with an Error
//       whose code is 'EA_INPUT'.
//       Resolves to {samples, bitsPerSymbol, alphabetSize, nonIid?, iid?, restart?}; every
//       estimate that does not apply is null.
//   eaEstimatorKeys, eaPermutationStatistics: the names used in the result.
#include <napi.h>

#include <cmath>
#include <memory>
#include <optional>
#include <string>

#include "ea/ea.h"
#include "napi/registry.h"

namespace {

using qe::ea::Samples;

Napi::Value number_or_null(Napi::Env env, double d) { return std::isnan(d) ? env.Null() : Napi::Number::New(env, d); }

struct Request {
  int bits_per_symbol = 0;
  bool non_iid = true;
  bool iid = false;
  bool conditioned = false;
  bool truncate = false;
  unsigned threads = 1;
  unsigned shuffles = 10000;
  bool full_permutation_test = false;
  std::optional<double> restart_entropy;
};

Napi::Object estimates_to_js(Napi::Env env, const std::array<double, qe::ea::kEstimatorCount>& values) {
  Napi::Object o = Napi::Object::New(env);
  for (int e = 0; e < qe::ea::kEstimatorCount; ++e)
    o.Set(qe::ea::kEstimatorKeys[e], number_or_null(env, values[static_cast<size_t>(e)]));
  return o;
}

Napi::Object non_iid_to_js(Napi::Env env, const qe::ea::NonIidResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("literal", r.has_literal ? Napi::Value(estimates_to_js(env, r.literal)) : env.Null());
  o.Set("bitstring", r.has_bitstring ? Napi::Value(estimates_to_js(env, r.bitstring)) : env.Null());
  o.Set("hOriginal", number_or_null(env, r.h_original));
  o.Set("hBitstring", number_or_null(env, r.h_bitstring));
  o.Set("hAssessed", Napi::Number::New(env, r.h_assessed));
  return o;
}

Napi::Object chi_to_js(Napi::Env env, const qe::ea::ChiSquare& c) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("statistic", c.statistic);
  o.Set("df", static_cast<double>(c.df));
  o.Set("pValue", c.p_value);
  return o;
}

const char* outcome_name(qe::ea::StatisticOutcome o) {
  switch (o) {
    case qe::ea::StatisticOutcome::passed: return "passed";
    case qe::ea::StatisticOutcome::failed: return "failed";
    case qe::ea::StatisticOutcome::open: break;
  }
  return "open";
}

Napi::Object iid_to_js(Napi::Env env, const qe::ea::IidResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("mostCommonLiteral", number_or_null(env, r.most_common_literal));
  o.Set("mostCommonBitstring", number_or_null(env, r.most_common_bitstring));
  o.Set("hOriginal", number_or_null(env, r.h_original));
  o.Set("hBitstring", number_or_null(env, r.h_bitstring));
  o.Set("hAssessed", r.h_assessed);
  o.Set("independence", chi_to_js(env, r.independence));
  o.Set("goodnessOfFit", chi_to_js(env, r.goodness_of_fit));
  o.Set("chiSquarePassed", r.chi_square_passed);
  Napi::Object lrs = Napi::Object::New(env);
  lrs.Set("collisionProbability", r.lrs_collision_probability);
  lrs.Set("length", static_cast<double>(r.lrs_length));
  lrs.Set("probability", r.lrs_probability);
  lrs.Set("passed", r.lrs_passed);
  o.Set("lrs", lrs);
  Napi::Array stats = Napi::Array::New(env, qe::ea::kPermutationStatistics);
  for (uint32_t i = 0; i < static_cast<uint32_t>(qe::ea::kPermutationStatistics); ++i) {
    Napi::Object s = Napi::Object::New(env);
    s.Set("name", qe::ea::kPermutationStatisticNames[i]);
    s.Set("value", r.unpermuted[i]);
    Napi::Array c = Napi::Array::New(env, 3);
    for (uint32_t j = 0; j < 3; ++j) c.Set(j, static_cast<double>(r.counts[i][j]));
    s.Set("counts", c);
    s.Set("outcome", outcome_name(r.outcomes[i]));
    stats.Set(i, s);
  }
  o.Set("permutation", stats);
  o.Set("shuffles", r.shuffles_run);
  // null: shuffling stopped before the permutation test had a verdict of its own.
  o.Set("permutationPassed", r.permutation_decided ? Napi::Value(Napi::Boolean::New(env, r.permutation_passed)) : env.Null());
  o.Set("passed", r.passed);
  return o;
}

Napi::Object restart_to_js(Napi::Env env, const qe::ea::RestartResult& r) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("hRow", number_or_null(env, r.h_row));
  o.Set("hColumn", number_or_null(env, r.h_column));
  o.Set("sanityPassed", r.sanity_passed);
  o.Set("maxCount", static_cast<double>(r.max_count));
  o.Set("cutoff", static_cast<double>(r.cutoff));
  o.Set("validated", r.validated);
  o.Set("hMin", number_or_null(env, r.h_min));
  return o;
}

struct ProgressEvent {
  size_t done, total;
};

class AssessWorker : public Napi::AsyncWorker {
 public:
  AssessWorker(Napi::Env env, Napi::Uint8Array data, Request request, Napi::Function on_progress)
      : Napi::AsyncWorker(env, "qentropy:ea"),
        deferred_(Napi::Promise::Deferred::New(env)),
        data_ref_(Napi::Persistent(data)),
        bytes_(data.Data()),
        length_(data.ElementLength()),
        request_(request) {
    if (!on_progress.IsEmpty()) {
      progress_ = Napi::ThreadSafeFunction::New(env, on_progress, "qentropy:ea-progress", 0, 1);
      has_progress_ = true;
    }
  }

  Napi::Promise promise() { return deferred_.Promise(); }

 protected:
  void Execute() override {
    try {
      samples_ = qe::ea::prepare(bytes_, length_, request_.bits_per_symbol);
      // The tracks report their own job counts; progress spans them in order.
      const size_t tracks = (request_.non_iid ? 1 : 0) + (request_.iid ? 1 : 0) + (request_.restart_entropy ? 1 : 0);
      size_t track = 0;
      auto progress_for = [this, tracks, &track]() -> qe::ea::Progress {
        if (!has_progress_) return {};
        const size_t base = track++;
        return [this, tracks, base](size_t done, size_t total) { report((base * total + done) * 1000 / (tracks * total), 1000); };
      };
      if (request_.restart_entropy) {
        qe::ea::NonIidOptions o;
        o.threads = request_.threads;
        o.progress = progress_for();
        restart_ = qe::ea::assess_restart(samples_, *request_.restart_entropy, request_.iid, o);
      } else {
        if (request_.non_iid) {
          qe::ea::NonIidOptions o;
          o.conditioned = request_.conditioned;
          o.truncate = request_.truncate;
          o.threads = request_.threads;
          o.progress = progress_for();
          non_iid_ = qe::ea::assess_non_iid(samples_, o);
        }
        if (request_.iid) {
          qe::ea::IidOptions o;
          o.conditioned = request_.conditioned;
          o.truncate = request_.truncate;
          o.threads = request_.threads;
          o.shuffles = request_.shuffles;
          o.stop_on_failed_tests = !request_.full_permutation_test;
          o.progress = progress_for();
          iid_ = qe::ea::assess_iid(samples_, o);
        }
      }
    } catch (const qe::ea::InputError& e) {
      input_error_ = true;
      SetError(e.what());
    } catch (const std::bad_alloc&) {
      SetError("not enough memory for this many samples");
    } catch (const std::exception& e) {
      SetError(e.what());
    }
    if (has_progress_) progress_.Release();
  }

  void OnOK() override {
    Napi::Env env = Env();
    Napi::Object out = Napi::Object::New(env);
    out.Set("samples", static_cast<double>(samples_.symbols.size()));
    out.Set("bitsPerSymbol", samples_.bits_per_symbol);
    out.Set("alphabetSize", samples_.alphabet_size);
    if (non_iid_) out.Set("nonIid", non_iid_to_js(env, *non_iid_));
    if (iid_) out.Set("iid", iid_to_js(env, *iid_));
    if (restart_) out.Set("restart", restart_to_js(env, *restart_));
    data_ref_.Reset();
    deferred_.Resolve(out);
  }

  void OnError(const Napi::Error& e) override {
    Napi::Error err = Napi::Error::New(Env(), e.Message());
    if (input_error_) err.Set("code", Napi::String::New(Env(), "EA_INPUT"));
    data_ref_.Reset();
    deferred_.Reject(err.Value());
  }

 private:
  void report(size_t done, size_t total) {
    auto* p = new ProgressEvent{done, total};
    if (progress_.NonBlockingCall(p, [](Napi::Env env, Napi::Function fn, ProgressEvent* d) {
          const ProgressEvent v = *d;
          delete d;
          if (env != nullptr && !fn.IsEmpty())
            fn.Call({Napi::Number::New(env, static_cast<double>(v.done)), Napi::Number::New(env, static_cast<double>(v.total))});
        }) != napi_ok)
      delete p;
  }

  Napi::Promise::Deferred deferred_;
  Napi::Reference<Napi::Uint8Array> data_ref_;
  const uint8_t* bytes_;
  size_t length_;
  Request request_;
  Napi::ThreadSafeFunction progress_;
  bool has_progress_ = false;
  bool input_error_ = false;
  Samples samples_;
  std::optional<qe::ea::NonIidResult> non_iid_;
  std::optional<qe::ea::IidResult> iid_;
  std::optional<qe::ea::RestartResult> restart_;
};

bool flag(const Napi::Object& o, const char* key, bool fallback) {
  if (!o.Has(key) || o.Get(key).IsUndefined()) return fallback;
  return o.Get(key).ToBoolean();
}

unsigned count_option(const Napi::Env& env, const Napi::Object& o, const char* key, unsigned fallback, unsigned max) {
  if (!o.Has(key) || o.Get(key).IsUndefined()) return fallback;
  const Napi::Value v = o.Get(key);
  if (!v.IsNumber()) throw Napi::TypeError::New(env, std::string(key) + " must be a number");
  const double d = v.As<Napi::Number>().DoubleValue();
  if (!(d >= 0) || d != std::floor(d) || d > max)
    throw Napi::RangeError::New(env, std::string(key) + " must be an integer from 0 to " + std::to_string(max));
  return static_cast<unsigned>(d);
}

Napi::Value Assess(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsTypedArray() || info[0].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "eaAssess: data must be a Uint8Array or Buffer");
  const Napi::Object o = info.Length() > 1 && info[1].IsObject() ? info[1].As<Napi::Object>() : Napi::Object::New(env);
  Request r;
  r.bits_per_symbol = static_cast<int>(count_option(env, o, "bitsPerSymbol", 0, 8));
  r.non_iid = flag(o, "nonIid", true);
  r.iid = flag(o, "iid", false);
  r.conditioned = flag(o, "conditioned", false);
  r.truncate = flag(o, "truncate", false);
  r.threads = std::max(1u, count_option(env, o, "threads", 1, 1024));
  r.shuffles = count_option(env, o, "shuffles", 10000, 10000);
  r.full_permutation_test = flag(o, "fullPermutationTest", false);
  if (o.Has("restartEntropy") && !o.Get("restartEntropy").IsUndefined()) {
    if (!o.Get("restartEntropy").IsNumber()) throw Napi::TypeError::New(env, "restartEntropy must be a number");
    r.restart_entropy = o.Get("restartEntropy").As<Napi::Number>().DoubleValue();
  }
  Napi::Function on_progress;
  if (info.Length() > 2 && info[2].IsFunction()) on_progress = info[2].As<Napi::Function>();
  auto* worker = new AssessWorker(env, info[0].As<Napi::Uint8Array>(), r, on_progress);
  Napi::Promise p = worker->promise();
  worker->Queue();
  return p;
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("eaAssess", Napi::Function::New(env, Assess, "eaAssess"));
  Napi::Array keys = Napi::Array::New(env, qe::ea::kEstimatorCount);
  for (uint32_t i = 0; i < static_cast<uint32_t>(qe::ea::kEstimatorCount); ++i) keys.Set(i, qe::ea::kEstimatorKeys[i]);
  exports.Set("eaEstimatorKeys", keys);
  Napi::Array stats = Napi::Array::New(env, qe::ea::kPermutationStatistics);
  for (uint32_t i = 0; i < static_cast<uint32_t>(qe::ea::kPermutationStatistics); ++i)
    stats.Set(i, qe::ea::kPermutationStatisticNames[i]);
  exports.Set("eaPermutationStatistics", stats);
});

}  // namespace
