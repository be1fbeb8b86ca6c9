// Bindings for the PKCS#11 sink. Every call that enters the module (dlopen,
// C_Initialize, sessions, C_SeedRandom) may block on a device or a network HSM, so each
// runs on the libuv thread pool and returns a Promise.
//   pkcs11ListTokens(modulePath) -> Promise<TokenInfo[]>
//   pkcs11Open({modulePath, tokenLabel, pin?, mixOsRandom?}) -> Promise<handle>
//   pkcs11Seed(handle, slotIndex, bytes) -> Promise<SeedResult>
//   pkcs11Generate(handle, slotIndex, size) -> Promise<Buffer>
//   pkcs11Slots(handle) -> Promise<SlotState[]>
//   pkcs11Close(handle) -> Promise<void>
// Rejections carry `code` (a CKR_* name, or 'MODULE_LOAD' / 'NO_TOKEN' / 'INVALID').
#include <napi.h>

#include <functional>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "napi/registry.h"
#include "pkcs11/module.h"
#include "pkcs11/sink.h"

namespace {

using qe::pkcs11::Sink;

constexpr uint32_t kTag = 0x504b3131;  // "PK11"
struct Holder {
  uint32_t tag = kTag;
  std::shared_ptr<Sink> sink;  // workers hold their own reference while they run
};

std::shared_ptr<Sink> unwrap(const Napi::CallbackInfo& info, const char* fn) {
  if (info.Length() < 1 || !info[0].IsExternal()) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  auto* h = info[0].As<Napi::External<Holder>>().Data();
  if (!h || h->tag != kTag || !h->sink) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": bad handle");
  return h->sink;
}

// Runs `work` on the thread pool; `convert` turns its result into a JS value on the
// main thread. Exceptions become rejections with a `code`.
template <typename R>
class Task : public Napi::AsyncWorker {
 public:
  Task(Napi::Env env, std::function<R()> work, std::function<Napi::Value(Napi::Env, R&)> convert)
      : Napi::AsyncWorker(env), deferred_(Napi::Promise::Deferred::New(env)), work_(std::move(work)),
        convert_(std::move(convert)) {}

  Napi::Promise promise() { return deferred_.Promise(); }

  void Execute() override {
    try {
      result_.emplace(work_());
    } catch (const qe::pkcs11::Pkcs11Error& e) {
      fail(e.what(), qe::pkcs11::rv_name(e.rv()));
    } catch (const qe::pkcs11::ModuleLoadError& e) {
      fail(e.what(), "MODULE_LOAD");
    } catch (const std::invalid_argument& e) {
      fail(e.what(), "INVALID");
    } catch (const std::out_of_range& e) {
      fail(e.what(), "INVALID");
    } catch (const std::exception& e) {
      fail(e.what(), std::string(e.what()).find("no token labelled") != std::string::npos ? "NO_TOKEN" : "ERROR");
    }
  }

  void OnOK() override {
    Napi::Env env = Env();
    if (error_) {
      Napi::Error err = Napi::Error::New(env, *error_);
      err.Set("code", Napi::String::New(env, code_));
      deferred_.Reject(err.Value());
      return;
    }
    try {
      deferred_.Resolve(convert_(env, *result_));
    } catch (const Napi::Error& e) {
      deferred_.Reject(e.Value());
    }
  }

 private:
  void fail(std::string message, std::string code) {
    error_ = std::move(message);
    code_ = std::move(code);
  }

  Napi::Promise::Deferred deferred_;
  std::function<R()> work_;
  std::function<Napi::Value(Napi::Env, R&)> convert_;
  std::optional<R> result_;
  std::optional<std::string> error_;
  std::string code_;
};

template <typename R>
Napi::Value queue(Napi::Env env, std::function<R()> work, std::function<Napi::Value(Napi::Env, R&)> convert) {
  auto* task = new Task<R>(env, std::move(work), std::move(convert));
  Napi::Promise p = task->promise();
  task->Queue();
  return p;
}

std::string string_field(const Napi::Object& o, const char* key, bool required) {
  if (!o.Has(key) || o.Get(key).IsUndefined() || o.Get(key).IsNull()) {
    if (required) throw Napi::TypeError::New(o.Env(), std::string(key) + " is required");
    return "";
  }
  if (!o.Get(key).IsString()) throw Napi::TypeError::New(o.Env(), std::string(key) + " must be a string");
  return o.Get(key).As<Napi::String>().Utf8Value();
}

size_t index_arg(const Napi::CallbackInfo& info, size_t i, const char* fn) {
  if (info.Length() <= i || !info[i].IsNumber()) throw Napi::TypeError::New(info.Env(), std::string(fn) + ": slot index must be a number");
  const double d = info[i].As<Napi::Number>().DoubleValue();
  if (!(d >= 0 && d < 1e9) || d != static_cast<double>(static_cast<size_t>(d)))
    throw Napi::RangeError::New(info.Env(), std::string(fn) + ": slot index must be a non-negative integer");
  return static_cast<size_t>(d);
}

Napi::Value ListTokens(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsString()) throw Napi::TypeError::New(env, "pkcs11ListTokens(modulePath)");
  const std::string path = info[0].As<Napi::String>().Utf8Value();
  using Tokens = std::vector<qe::pkcs11::TokenInfo>;
  return queue<Tokens>(
      env, [path] { return qe::pkcs11::Module(path).tokens(); },
      [](Napi::Env e, Tokens& tokens) -> Napi::Value {
        Napi::Array out = Napi::Array::New(e, tokens.size());
        for (uint32_t i = 0; i < tokens.size(); ++i) {
          Napi::Object t = Napi::Object::New(e);
          t.Set("slot", static_cast<double>(tokens[i].slot));
          t.Set("label", tokens[i].label);
          t.Set("manufacturer", tokens[i].manufacturer);
          t.Set("model", tokens[i].model);
          t.Set("serial", tokens[i].serial);
          t.Set("hasRng", tokens[i].has_rng());
          t.Set("loginRequired", tokens[i].login_required());
          out.Set(i, t);
        }
        return out;
      });
}

Napi::Value Open(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsObject()) throw Napi::TypeError::New(env, "pkcs11Open(options)");
  Napi::Object o = info[0].As<Napi::Object>();
  qe::pkcs11::SinkConfig cfg;
  cfg.module_path = string_field(o, "modulePath", true);
  cfg.token_label = string_field(o, "tokenLabel", true);
  if (o.Has("pin") && !o.Get("pin").IsUndefined() && !o.Get("pin").IsNull()) cfg.pin = string_field(o, "pin", true);
  cfg.mix_os_random = o.Has("mixOsRandom") && o.Get("mixOsRandom").ToBoolean();
  using Ptr = std::shared_ptr<Sink>;
  auto shared_cfg = std::make_shared<qe::pkcs11::SinkConfig>(std::move(cfg));
  return queue<Ptr>(
      env, [shared_cfg] { return std::make_shared<Sink>(std::move(*shared_cfg)); },
      [](Napi::Env e, Ptr& sink) -> Napi::Value {
        auto* h = new Holder{kTag, sink};
        return Napi::External<Holder>::New(e, h, [](Napi::Env, Holder* p) { delete p; });
      });
}

Napi::Object slot_object(Napi::Env env, const qe::pkcs11::SlotState& s) {
  Napi::Object o = Napi::Object::New(env);
  o.Set("slot", static_cast<double>(s.slot));
  o.Set("label", s.label);
  o.Set("status", qe::pkcs11::slot_status_name(s.status));
  o.Set("seedCalls", static_cast<double>(s.seed_calls));
  o.Set("bytesSeeded", static_cast<double>(s.bytes_seeded));
  o.Set("errors", static_cast<double>(s.errors));
  o.Set("lastRv", qe::pkcs11::rv_name(s.last_rv));
  if (!s.last_error.empty()) o.Set("lastError", s.last_error);
  return o;
}

Napi::Value Seed(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto sink = unwrap(info, "pkcs11Seed");
  const size_t index = index_arg(info, 1, "pkcs11Seed");
  if (info.Length() < 3 || !info[2].IsTypedArray() || info[2].As<Napi::TypedArray>().TypedArrayType() != napi_uint8_array)
    throw Napi::TypeError::New(env, "pkcs11Seed(handle, slotIndex, bytes): bytes must be a Uint8Array");
  Napi::Uint8Array data = info[2].As<Napi::Uint8Array>();
  // Copied: the JS buffer may be reused or collected while the worker runs. Wiped after.
  auto copy = std::make_shared<std::vector<uint8_t>>(data.Data(), data.Data() + data.ElementLength());
  return queue<qe::pkcs11::SeedResult>(
      env,
      [sink, index, copy] {
        auto r = sink->seed(index, copy->data(), copy->size());
        explicit_bzero(copy->data(), copy->size());
        return r;
      },
      [](Napi::Env e, qe::pkcs11::SeedResult& r) -> Napi::Value {
        Napi::Object o = Napi::Object::New(e);
        o.Set("ok", r.ok);
        o.Set("skipped", r.skipped);
        o.Set("newlyUnsupported", r.newly_unsupported);
        o.Set("rv", qe::pkcs11::rv_name(r.rv));
        if (!r.message.empty()) o.Set("message", r.message);
        return o;
      });
}

Napi::Value Generate(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  auto sink = unwrap(info, "pkcs11Generate");
  const size_t index = index_arg(info, 1, "pkcs11Generate");
  if (info.Length() < 3 || !info[2].IsNumber()) throw Napi::TypeError::New(env, "pkcs11Generate(handle, slotIndex, size)");
  const double size = info[2].As<Napi::Number>().DoubleValue();
  if (!(size >= 1 && size <= 1 << 20) || size != static_cast<double>(static_cast<size_t>(size)))
    throw Napi::RangeError::New(env, "pkcs11Generate: size must be an integer from 1 to 1048576");
  using Bytes = std::vector<uint8_t>;
  return queue<Bytes>(
      env, [sink, index, n = static_cast<size_t>(size)] { return sink->generate(index, n); },
      [](Napi::Env e, Bytes& b) -> Napi::Value {
        auto buf = Napi::Buffer<uint8_t>::Copy(e, b.data(), b.size());
        explicit_bzero(b.data(), b.size());
        return buf;
      });
}

Napi::Value Slots(const Napi::CallbackInfo& info) {
  auto sink = unwrap(info, "pkcs11Slots");
  using States = std::vector<qe::pkcs11::SlotState>;
  return queue<States>(
      info.Env(), [sink] { return sink->slots(); },
      [](Napi::Env e, States& states) -> Napi::Value {
        Napi::Array out = Napi::Array::New(e, states.size());
        for (uint32_t i = 0; i < states.size(); ++i) out.Set(i, slot_object(e, states[i]));
        return out;
      });
}

Napi::Value Close(const Napi::CallbackInfo& info) {
  auto sink = unwrap(info, "pkcs11Close");
  return queue<bool>(
      info.Env(),
      [sink] {
        sink->close();
        return true;
      },
      [](Napi::Env e, bool&) -> Napi::Value { return e.Undefined(); });
}

qe::napi::RegisterExports reg([](Napi::Env env, Napi::Object exports) {
  exports.Set("pkcs11ListTokens", Napi::Function::New(env, ListTokens, "pkcs11ListTokens"));
  exports.Set("pkcs11Open", Napi::Function::New(env, Open, "pkcs11Open"));
  exports.Set("pkcs11Seed", Napi::Function::New(env, Seed, "pkcs11Seed"));
  exports.Set("pkcs11Generate", Napi::Function::New(env, Generate, "pkcs11Generate"));
  exports.Set("pkcs11Slots", Napi::Function::New(env, Slots, "pkcs11Slots"));
  exports.Set("pkcs11Close", Napi::Function::New(env, Close, "pkcs11Close"));
});

}  // namespace
