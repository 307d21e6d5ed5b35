"""The GPU memory warning's words (issue 47, part 1), in English and Japanese: the owner's DM when the GPU-memory alert
opens (infra/gpu.tf), what holds the GPU's memory as the guard last saw it (shared/core/gpu_holders.py), and the
organizers' channel line."""

from __future__ import annotations

from typing import Final

from shared.core.messages.formatting import Lang

GPU: Final[dict[str, dict[Lang, str]]] = {
    "warn.gpu.dm": {
        "en": ":warning: The GPU of your notebook *{instance}* is using {percent} of its memory. The next allocation "
        "may fail with \"CUDA out of memory\": the cell stops, the kernel and its variables stay. Free what you no "
        "longer need (`del model; torch.cuda.empty_cache()` in PyTorch), use a smaller batch, or stop another "
        "kernel that holds the GPU.",
        "ja": ":warning: ノートブック *{instance}* の GPU メモリ使用率が {percent} に達しています。次の確保で "
        "\"CUDA out of memory\" になることがあります (セルは止まりますが、カーネルと変数は残ります)。不要になったものを"
        "解放する (PyTorch なら `del model; torch.cuda.empty_cache()`)、バッチを小さくする、または GPU を使っている"
        "別のカーネルを停止してください。",
    },
    "warn.gpu.holders": {
        "en": "What holds the GPU's memory (as the guard saw it {age} ago):",
        "ja": "GPU メモリを保持しているプロセス ({age}前のガードの記録):",
    },
    "warn.gpu.holder": {
        "en": "• `{process}` (pid {pid}): {held}, {who}",
        "ja": "• `{process}` (pid {pid}): {held}、{who}",
    },
    "warn.gpu.who.kernel": {
        "en": "a running kernel's (pid {kernel})",
        "ja": "実行中のカーネル (pid {kernel}) のもの",
    },
    "warn.gpu.who.orphan": {
        "en": "its kernel is gone: the guard ends it after a grace period and frees its memory",
        "ja": "カーネルは終了済みです。猶予期間の後、ガードが終了させてメモリを解放します",
    },
    "warn.gpu.who.other": {
        "en": "not a notebook kernel (a terminal's run or a service)",
        "ja": "ノートブックのカーネルではありません (ターミナルの実行やサービス)",
    },
    "warn.gpu.held_unknown": {"en": "an unknown amount", "ja": "不明な量"},
    "warn.gpu.no_holders": {
        "en": "(Which processes hold it is not known: {reason}. In JupyterLab's terminal, `nvidia-smi` lists them.)",
        "ja": "(どのプロセスが保持しているかは不明です: {reason}。JupyterLab のターミナルで `nvidia-smi` を実行すると"
        "一覧が分かります。)",
    },
    "warn.gpu.none_listed": {
        "en": "the guard saw no process holding it",
        "ja": "ガードはメモリを保持しているプロセスを見つけていません",
    },
    "warn.gpu.stale": {
        "en": "the guard's last list is {age} old",
        "ja": "ガードの最後の記録は {age}前のものです",
    },
    "warn.gpu.channel": {
        "en": ":chart_with_upwards_trend: {instance}'s GPU is at {percent} memory; I warned {owner}.",
        "ja": ":chart_with_upwards_trend: {instance} の GPU メモリ使用率が {percent} です。{owner} さんに警告しました。",
    },
    "warn.gpu.channel.unreached": {
        "en": ":chart_with_upwards_trend: {instance}'s GPU is at {percent} memory; I could not reach its owner "
        "{owner} by DM.",
        "ja": ":chart_with_upwards_trend: {instance} の GPU メモリ使用率が {percent} です。所有者 {owner} さんに DM "
        "を送れませんでした。",
    },
    "warn.gpu.channel.no_owner": {
        "en": ":chart_with_upwards_trend: {instance}'s GPU is at {percent} memory; it has no owner to warn "
        "(no proxy-user-mail).",
        "ja": ":chart_with_upwards_trend: {instance} の GPU メモリ使用率が {percent} です。警告する所有者がいません "
        "(proxy-user-mail なし)。",
    },
    "warn.gpu.channel.no_dm": {
        "en": ":chart_with_upwards_trend: {instance}'s GPU is at {percent} memory; its owner {owner} was not "
        "messaged (OWNER_DM=false).",
        "ja": ":chart_with_upwards_trend: {instance} の GPU メモリ使用率が {percent} です。所有者 {owner} さんには "
        "連絡していません (OWNER_DM=false)。",
    },
}
