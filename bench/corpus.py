#!/usr/bin/env python3
# Copied from ../shared/bench/corpus.py (only this line added): the corpus every generator is timed on.
"""Deterministic benchmark corpus: N synthetic "ML training failure" entries.

The same content in three forms, so a build can be timed side by side with Hugo and MkDocs:
  OUT/entries.jsonl                  one JSON object per entry, neutral field names (convert these
                                     to the real entry format before building)
  OUT/hugo/content/entries/<slug>.md Hugo pages (YAML front matter: title, slug, tags, related)
  OUT/hugo/{hugo.toml,layouts/...}   minimal Hugo site (no theme), tags taxonomy -> tag pages
  OUT/mkdocs/docs/<slug>.md          MkDocs pages (front matter: title, tags), nav auto
  OUT/mkdocs/docs/{index,tags}.md    home + material tags listing page
  OUT/mkdocs/mkdocs-default.yml      default 'mkdocs' theme (+ default search plugin)
  OUT/mkdocs/mkdocs-material.yml     material theme + search + tags plugins, pygments highlighting
  OUT/mkdocs/mkdocs-*-smallnav.yml   same, but nav = [index, tags] (entries built, not listed in every page's nav)
  OUT/hugo/hugo-nohl.toml            same Hugo site with code-fence highlighting (Chroma) off

The same text appears in all three forms. Output is byte-identical for the same
(--n, --seed).  Usage:  python corpus.py --n 1000 --out OUT_DIR [--seed 1234]
"""
import argparse
import json
import os
import random
import re
import shutil

import yaml

# ----------------------------------------------------------------------------- vocab
TAGS = """fsdp fsdp2 ddp deepspeed zero1 zero2 zero3 megatron tensor-parallel pipeline-parallel
sequence-parallel context-parallel expert-parallel moe router-collapse load-balancing amp bf16 fp16
fp8 int8 quantization qlora lora peft nccl gloo mpi infiniband rdma nvlink allreduce allgather
reduce-scatter collective-timeout watchdog deadlock hang oom cuda-oom fragmentation
memory-leak activation-checkpointing gradient-checkpointing offload cpu-offload nvme-offload
gradient-accumulation gradient-clipping grad-norm loss-spike loss-plateau divergence nan inf
overflow underflow loss-scaling dynamic-loss-scale adamw adam lion sgd adafactor shampoo sophia
muon optimizer-state learning-rate lr-schedule warmup cosine-decay wsd weight-decay
epsilon betas layernorm rmsnorm qk-norm attention flash-attention sdpa kv-cache rope alibi
positional-encoding long-context tokenizer vocab padding packing attention-mask data-loader
shuffling dedup contamination data-mixture curriculum streaming-dataset webdataset
checkpointing resume determinism seeding reproducibility torch-compile inductor triton
cuda-graphs kernels cudnn cublas tf32 matmul-precision mixed-precision master-weights
embedding tied-embeddings logits z-loss label-smoothing cross-entropy distillation rlhf dpo ppo
reward-model kl-penalty sft pretraining finetuning evaluation benchmark perplexity
throughput mfu profiling torch-profiler nsight dataloader-workers pin-memory prefetch
straggler elastic torchrun slurm kubernetes preemption spot-instances storage s3 gcs
jax xla tpu pjit sharding pytorch lightning accelerate transformers huggingface vllm
inference batch-size micro-batch global-batch scaling-laws mup initialization
residual-scaling dropout stochastic-depth vision-transformer diffusion""".split()

COMPONENTS = ["FSDP", "DeepSpeed ZeRO-3", "DDP", "Megatron-LM", "NCCL", "AMP autocast", "bf16 autocast",
              "the GradScaler", "torch.compile", "FlashAttention-2", "the data loader", "AdamW",
              "the LR scheduler", "activation checkpointing", "tensor parallelism", "pipeline parallelism",
              "the tokenizer", "sequence packing", "the checkpoint loader", "gradient accumulation",
              "CUDA graphs", "the MoE router", "RMSNorm", "rotary embeddings", "the KV cache", "LoRA adapters",
              "QLoRA 4-bit weights", "fp8 matmuls", "the optimizer state", "the reward model"]
SYMPTOMS = ["loss spikes to NaN", "loss plateaus early", "throughput drops by half", "training hangs",
            "gradients explode", "gradients vanish", "CUDA OOM at step one", "memory grows every step",
            "the run diverges after warmup", "eval loss stops tracking train loss", "ranks deadlock",
            "the resumed run diverges", "grad-norm oscillates", "MFU collapses", "validation perplexity rises",
            "checkpoints are silently corrupt", "the loss scale collapses to zero", "outputs repeat tokens",
            "attention entropy collapses", "one rank is much slower", "collective ops time out",
            "results differ across restarts", "logits grow without bound", "the router sends all tokens to one expert"]
CONTEXTS = ["after enabling bf16", "with ZeRO-3 and CPU offload", "on multi-node runs", "after resuming from a checkpoint",
            "when scaling the batch size", "with sequence lengths above 8k", "under torch.compile",
            "with gradient accumulation", "after switching to FSDP2", "on mixed A100/H100 clusters",
            "with packed sequences", "during long warmup", "with tied embeddings", "after a tokenizer change",
            "with fp16 and dynamic loss scaling", "when using LoRA on a quantized base", "with activation checkpointing",
            "on preemptible nodes", "with a cosine schedule", "after increasing the learning rate"]
NOUNS = ["optimizer state", "master weights", "loss scale", "gradient norm", "attention logits", "activation memory",
         "communication bucket", "all-reduce", "reduce-scatter", "shard", "micro-batch", "global batch",
         "learning rate", "warmup phase", "checkpoint", "data shard", "random state", "autocast region",
         "parameter group", "weight decay", "epsilon", "second moment", "layer norm", "residual stream",
         "embedding table", "router logits", "KV cache", "CUDA allocator", "stream", "collective"]
VERBS = ["overflows", "underflows", "drifts", "is rescaled", "is never synchronised", "is silently cast",
         "accumulates error", "is reset", "is sharded unevenly", "is recomputed", "is duplicated",
         "falls out of sync", "saturates", "is clipped too late", "is read before it is written",
         "is double-counted", "grows quadratically", "is freed too early", "is cached across steps"]
ADJ = ["subtle", "intermittent", "silent", "rank-dependent", "nondeterministic", "precision-related",
       "scale-dependent", "config-driven", "hardware-specific", "version-specific", "rare", "common"]
SYSTEMS = ["PyTorch 2.1-2.4", "PyTorch FSDP (v1)", "FSDP2 / fully_shard", "DeepSpeed 0.12+", "Megatron-LM core",
           "Hugging Face Transformers Trainer", "Accelerate", "PyTorch Lightning", "JAX + pjit", "NCCL 2.18-2.21",
           "CUDA 12.x", "A100 80GB", "H100 SXM", "TPU v4/v5", "Slurm clusters", "Kubernetes + torchrun",
           "bitsandbytes 4-bit", "PEFT LoRA", "FlashAttention 2.x", "Triton kernels", "vLLM", "TRL (DPO/PPO)"]
REF_SITES = ["https://pytorch.org/docs/stable/", "https://github.com/pytorch/pytorch/issues/",
             "https://arxiv.org/abs/", "https://github.com/microsoft/DeepSpeed/issues/",
             "https://github.com/NVIDIA/nccl/issues/", "https://docs.nvidia.com/deeplearning/",
             "https://huggingface.co/docs/transformers/", "https://github.com/NVIDIA/Megatron-LM/issues/"]
CODE_LINES = [
    "model = FSDP(model, mixed_precision=MixedPrecision(param_dtype=torch.bfloat16, reduce_dtype=torch.float32))",
    "scaler = torch.cuda.amp.GradScaler(init_scale=2**{n}, growth_interval={m})",
    "optimizer = torch.optim.AdamW(model.parameters(), lr={f}, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1)",
    "with torch.autocast(device_type='cuda', dtype=torch.bfloat16):",
    "    loss = model(**batch).loss / accum_steps",
    "scaler.scale(loss).backward()",
    "if (step + 1) % accum_steps == 0:",
    "    scaler.unscale_(optimizer)",
    "    grad_norm = torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm={g})",
    "    scaler.step(optimizer)",
    "    scaler.update()",
    "    optimizer.zero_grad(set_to_none=True)",
    "if not torch.isfinite(loss):",
    "    logger.warning('non-finite loss at step %d (rank %d)', step, dist.get_rank())",
    "    raise FloatingPointError(f'loss={{loss.item()}} at step {{step}}')",
    "os.environ['NCCL_DEBUG'] = 'INFO'",
    "os.environ['TORCH_NCCL_ASYNC_ERROR_HANDLING'] = '1'",
    "dist.init_process_group('nccl', timeout=datetime.timedelta(seconds={m}))",
    "torch.backends.cuda.matmul.allow_tf32 = {b}",
    "torch.manual_seed(seed + dist.get_rank())",
    "sampler = DistributedSampler(dataset, shuffle=True, seed=seed, drop_last=True)",
    "sampler.set_epoch(epoch)  # forgetting this repeats the same order every epoch",
    "state = {{'model': model.state_dict(), 'optim': optimizer.state_dict(), 'step': step}}",
    "torch.save(state, f'{{ckpt_dir}}/step_{{step:07d}}.pt')",
    "print(torch.cuda.memory_summary(abbreviated=True))",
    "torch.cuda.reset_peak_memory_stats()",
    "for name, p in model.named_parameters():",
    "    if p.grad is not None and not torch.isfinite(p.grad).all():",
    "        print(f'{{name}}: non-finite grad, max={{p.grad.abs().max().item():.3e}}')",
    "scheduler = get_cosine_schedule_with_warmup(optimizer, num_warmup_steps={m}, num_training_steps={n}000)",
    "model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={{'use_reentrant': False}})",
    "model = torch.compile(model, mode='max-autotune', dynamic=False)",
    "logits = logits.float()  # upcast before softmax / cross-entropy",
    "z_loss = {f} * torch.logsumexp(logits, dim=-1).pow(2).mean()",
    "attn_mask = build_block_causal_mask(seq_lens, device=input_ids.device)",
    "assert batch['input_ids'].shape[1] <= max_seq_len, batch['input_ids'].shape",
    "world = dist.get_world_size()",
    "tensor = torch.ones(1, device='cuda') * dist.get_rank()",
    "dist.all_reduce(tensor, op=dist.ReduceOp.SUM)",
    "assert tensor.item() == world * (world - 1) / 2, tensor.item()",
]


def words(rng, n):
    out = []
    for _ in range(n):
        out.append(rng.choice(NOUNS + VERBS + ADJ + ["the", "a", "when", "because", "and", "which", "then",
                                                        "so", "only", "every", "step", "rank", "value"]))
    return " ".join(out)


def sentence(rng):
    kind = rng.randrange(6)
    c, n, v, a = rng.choice(COMPONENTS), rng.choice(NOUNS), rng.choice(VERBS), rng.choice(ADJ)
    if kind == 0:
        return f"When {c} is active, the {n} {v}, which is a {a} failure that only shows up after a few hundred steps."
    if kind == 1:
        return f"The root cause is that the `{n.replace(' ', '_')}` {v} inside {c}, so every rank sees a slightly different value."
    if kind == 2:
        return f"This is **{a}**: the {n} {v} only at large scale, and small reproductions on one GPU look healthy."
    if kind == 3:
        return f"In practice {c} interacts with the {rng.choice(NOUNS)}; once the {n} {v} the optimizer cannot recover."
    if kind == 4:
        return f"Check whether the {n} {v} by logging it every {rng.choice([10, 50, 100, 500])} steps, *before* and after {c}."
    return f"Most reports mention {c} together with {rng.choice(COMPONENTS)}, and the {n} {v} ({words(rng, 4)})."


def para(rng, lo, hi):
    return " ".join(sentence(rng) for _ in range(rng.randint(lo, hi)))


def code_block(rng):
    nlines = rng.randint(15, 30)
    lines = [f"# {sentence(rng)[:60]}", "import os, datetime", "import torch", "import torch.distributed as dist", ""]
    lines.append(f"def {rng.choice(['train_step', 'check_grads', 'debug_rank', 'setup', 'resume', 'probe'])}"
                 f"_{rng.randrange(100)}(model, batch, optimizer, step, accum_steps={rng.choice([1, 2, 4, 8])}):")
    while len(lines) < nlines:
        line = rng.choice(CODE_LINES).format(n=rng.randint(8, 16), m=rng.choice([100, 500, 1800, 2000]),
                                             f=rng.choice(["3e-4", "1e-4", "6e-5", "1e-3"]),
                                             g=rng.choice(["1.0", "0.5", "2.0"]), b=rng.choice(["True", "False"]))
        line = line.strip()
        if line.endswith(":"):  # keep every example valid Python: no block openers without a body
            continue
        lines.append("    " + line)
    lines.append("    return loss")
    return "\n".join(lines)


def slugify(s):
    return re.sub(r"[^a-z0-9]+", "-", s.lower()).strip("-")


def make_entries(n, seed):
    rng = random.Random(seed)
    entries = []
    for i in range(n):
        title = f"{rng.choice(SYMPTOMS).capitalize()} {rng.choice(CONTEXTS)} ({rng.choice(COMPONENTS)})"
        slug = f"{slugify(title)[:70].strip('-')}-{i:05d}"
        e = {
            "slug": slug,
            "title": title,
            "quick_answer": para(rng, 1, 2),
            "tags": rng.sample(TAGS, rng.randint(3, 6)),
            "symptoms": [{"symptom": f"{rng.choice(SYMPTOMS).capitalize()} {rng.choice(CONTEXTS)}",
                          "why": sentence(rng)} for _ in range(rng.randint(3, 5))],
            "mechanism": "\n\n".join(para(rng, 2, 3) for _ in range(3)),
            "affected_systems": rng.sample(SYSTEMS, rng.randint(3, 6)),
            "confirmation_checklist": [sentence(rng) for _ in range(rng.randint(3, 5))],
            "fix_steps": [{"step": f"{rng.choice(['Disable', 'Enable', 'Pin', 'Upcast', 'Log', 'Clip', 'Reorder', 'Resync'])} "
                                   f"the {rng.choice(NOUNS)} in {rng.choice(COMPONENTS)}",
                           "detail": para(rng, 1, 1)} for _ in range(rng.randint(3, 5))],
            "code_examples": [{"title": f"{rng.choice(['Minimal repro', 'Diagnostic', 'Fix', 'Guard', 'Sanity check'])}: "
                                        f"{rng.choice(NOUNS)}",
                               "language": "python", "code": code_block(rng)} for _ in range(rng.randint(2, 3))],
            "faq": [{"q": f"Does this also happen {rng.choice(CONTEXTS)}?", "a": para(rng, 1, 1)}
                    for _ in range(rng.randint(8, 10))],
            "references": [{"title": f"{rng.choice(['Issue', 'Docs', 'Paper', 'Discussion'])}: {rng.choice(NOUNS)} "
                                     f"{rng.choice(VERBS)} with {rng.choice(COMPONENTS)}",
                            "url": f"{rng.choice(REF_SITES)}{rng.randrange(1000, 130000)}"}
                           for _ in range(rng.randint(3, 5))],
            "_related_idx": [rng.randrange(n) for _ in range(rng.randint(2, 4))],
        }
        entries.append(e)
    for i, e in enumerate(entries):
        idx = [j for j in dict.fromkeys(e.pop("_related_idx")) if j != i] or [(i + 1) % n]
        e["related"] = [entries[j]["slug"] for j in idx]
    return entries


# ----------------------------------------------------------------------------- YAML
class _Dumper(getattr(yaml, "CSafeDumper", yaml.SafeDumper)):
    pass


def _str_rep(dumper, data):
    if "\n" in data:
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", data)


_Dumper.add_representer(str, _str_rep)


# ----------------------------------------------------------------------------- Markdown body
def md_body(e, related_links=None):
    """Body shared by Hugo and MkDocs. related_links: list of (title, href) or None (template renders it)."""
    out = [f"**Quick answer:** {e['quick_answer']}", "", "## Symptoms", "", "| Symptom | Why |", "| --- | --- |"]
    out += [f"| {s['symptom']} | {s['why'].replace('|', '/')} |" for s in e["symptoms"]]
    out += ["", "## Mechanism", "", e["mechanism"], "", "## Affected systems", ""]
    out += [f"- {s}" for s in e["affected_systems"]]
    out += ["", "## Confirmation checklist", ""]
    out += [f"- [ ] {c}" for c in e["confirmation_checklist"]]
    out += ["", "## Fix", ""]
    out += [f"{k}. **{f['step']}.** {f['detail']}" for k, f in enumerate(e["fix_steps"], 1)]
    out += ["", "## Code examples", ""]
    for c in e["code_examples"]:
        out += [f"### {c['title']}", "", f"```{c['language']}", c["code"], "```", ""]
    out += ["## FAQ", ""]
    for q in e["faq"]:
        out += [f"### {q['q']}", "", q["a"], ""]
    out += ["## References", ""]
    out += [f"- [{r['title']}]({r['url']})" for r in e["references"]]
    if related_links is not None:
        out += ["", "## Related", ""]
        out += [f"- [{t}]({h})" for t, h in related_links]
    return "\n".join(out) + "\n"


def front_matter(d):
    return "---\n" + yaml.dump(d, Dumper=_Dumper, sort_keys=False, allow_unicode=True, width=1000) + "---\n\n"


# ----------------------------------------------------------------------------- site scaffolding
HUGO_TOML = """baseURL = "https://example.org/"
title = "ML Training Failures Encyclopedia"
disableKinds = ["rss"]
enableRobotsTXT = false
[taxonomies]
  tag = "tags"
[markup.highlight]
  codeFences = true
  noClasses = false
[markup.goldmark.renderer]
  unsafe = false
"""

HUGO_BASEOF = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{{ .Title }} | {{ site.Title }}</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body><header><a href="{{ "/" | relURL }}">{{ site.Title }}</a> · <a href="{{ "/tags/" | relURL }}">Tags</a></header>
<main>{{ block "main" . }}{{ end }}</main>
<footer>Generated by Hugo {{ hugo.Version }}</footer></body></html>
"""

HUGO_SINGLE = """{{ define "main" }}
<article>
<h1>{{ .Title }}</h1>
<ul class="tags">{{ range .GetTerms "tags" }}<li><a href="{{ .RelPermalink }}">{{ .LinkTitle }}</a></li>{{ end }}</ul>
{{ .Content }}
{{ with .Params.related }}<section class="related"><h2>Related</h2><ul>
{{ range . }}{{ with site.GetPage (printf "/entries/%s" .) }}<li><a href="{{ .RelPermalink }}">{{ .Title }}</a></li>{{ end }}{{ end }}
</ul></section>{{ end }}
</article>
{{ end }}
"""

HUGO_LIST = """{{ define "main" }}
<h1>{{ .Title }}</h1>
<ul>{{ range .Pages }}<li><a href="{{ .RelPermalink }}">{{ .LinkTitle }}</a></li>{{ end }}</ul>
{{ end }}
"""

HUGO_TAXONOMY = """{{ define "main" }}
<h1>{{ .Title }}</h1>
<ul>{{ range .Data.Terms.ByCount }}<li><a href="{{ .Page.RelPermalink }}">{{ .Page.LinkTitle }}</a> ({{ .Count }})</li>{{ end }}</ul>
{{ end }}
"""

MKDOCS_DEFAULT = """site_name: ML Training Failures Encyclopedia
site_url: https://example.org/
docs_dir: docs
site_dir: site-default
theme:
  name: mkdocs
# plugins: default is [search]
markdown_extensions: [toc, tables, fenced_code]
"""

MKDOCS_MATERIAL = """site_name: ML Training Failures Encyclopedia
site_url: https://example.org/
docs_dir: docs
site_dir: site-material
theme:
  name: material
plugins:
  - search
  - tags
markdown_extensions:
  - toc:
      permalink: true
  - tables
  - admonition
  - pymdownx.highlight
  - pymdownx.superfences
  - pymdownx.tasklist
"""


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, required=True)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if os.path.exists(a.out):
        shutil.rmtree(a.out)
    entries = make_entries(a.n, a.seed)
    titles = {e["slug"]: e["title"] for e in entries}
    os.makedirs(a.out, exist_ok=True)
    with open(f"{a.out}/entries.jsonl", "w", encoding="utf-8") as f:
        for e in entries:
            f.write(json.dumps(e, sort_keys=True, ensure_ascii=False) + "\n")
    for e in entries:
        write(f"{a.out}/hugo/content/entries/{e['slug']}.md",
              front_matter({"title": e["title"], "slug": e["slug"], "tags": e["tags"], "related": e["related"]})
              + md_body(e))
        write(f"{a.out}/mkdocs/docs/{e['slug']}.md",
              front_matter({"title": e["title"], "tags": e["tags"]})
              + f"# {e['title']}\n\n" + md_body(e, [(titles[s], f"{s}.md") for s in e["related"]]))
    h = f"{a.out}/hugo"
    write(f"{h}/hugo.toml", HUGO_TOML)
    write(f"{h}/hugo-nohl.toml", HUGO_TOML.replace("codeFences = true", "codeFences = false"))
    write(f"{h}/content/_index.md", "---\ntitle: Home\n---\n")
    write(f"{h}/content/entries/_index.md", "---\ntitle: Entries\n---\n")
    write(f"{h}/layouts/baseof.html", HUGO_BASEOF)
    write(f"{h}/layouts/single.html", HUGO_SINGLE)
    write(f"{h}/layouts/list.html", HUGO_LIST)
    write(f"{h}/layouts/taxonomy.html", HUGO_TAXONOMY)
    m = f"{a.out}/mkdocs"
    write(f"{m}/mkdocs-default.yml", MKDOCS_DEFAULT)
    write(f"{m}/mkdocs-material.yml", MKDOCS_MATERIAL)
    # variants whose nav lists only the home and tags pages (entries are still built): removes the
    # O(N) nav that the auto nav puts into every page (O(N^2) output)
    small = "nav: [index.md, tags.md]\nnot_in_nav: |\n  /*.md\n"
    write(f"{m}/mkdocs-default-smallnav.yml", MKDOCS_DEFAULT.replace("site-default", "site-default-smallnav") + small)
    write(f"{m}/mkdocs-material-smallnav.yml", MKDOCS_MATERIAL.replace("site-material", "site-material-smallnav") + small)
    write(f"{m}/docs/index.md", "# ML Training Failures Encyclopedia\n\nSee [Tags](tags.md).\n")
    write(f"{m}/docs/tags.md", "# Tags\n\n<!-- material/tags -->\n")
    print(f"wrote {a.n} entries to {a.out}")


if __name__ == "__main__":
    main()
