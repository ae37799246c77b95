/*
Copyright 2026.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package controller

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	operatorv1 "example.com/gordon/api/v1"
)

var _ = Describe("Gordon Controller", func() {
	Context("When reconciling a resource", func() {
		const (
			resourceName      = "test-resource"
			resourceNamespace = "default"
		)

		ctx := context.Background()

		typeNamespacedName := types.NamespacedName{
			Name:      resourceName,
			Namespace: resourceNamespace,
		}
		gordon := &operatorv1.Gordon{}

		BeforeEach(func() {
			By("creating the custom resource for the Kind Gordon")
			err := k8sClient.Get(ctx, typeNamespacedName, gordon)
			if err != nil && errors.IsNotFound(err) {
				resource := &operatorv1.Gordon{
					ObjectMeta: metav1.ObjectMeta{
						Name:      resourceName,
						Namespace: resourceNamespace,
					},
					Spec: operatorv1.GordonSpec{Gordon: operatorv1.GordonSettings{Replicas: 3}},
				}
				Expect(k8sClient.Create(ctx, resource)).To(Succeed())
			}
		})

		AfterEach(func() {
			// TODO(user): Cleanup logic after each test, like removing the resource instance.
			resource := &operatorv1.Gordon{}
			err := k8sClient.Get(ctx, typeNamespacedName, resource)
			Expect(err).NotTo(HaveOccurred())

			By("Cleanup the specific resource instance Gordon")
			Expect(k8sClient.Delete(ctx, resource)).To(Succeed())
		})
		It("should successfully reconcile the resource", func() {
			By("Reconciling the created resource")
			controllerReconciler := &GordonReconciler{
				Client:    k8sClient,
				Scheme:    k8sClient.Scheme(),
				APIReader: k8sClient,
			}

			_, err := controllerReconciler.Reconcile(ctx, reconcile.Request{
				NamespacedName: typeNamespacedName,
			})
			Expect(err).NotTo(HaveOccurred())

			By("finding the Gordon's 3 pods, owned by it, and listed in its status")
			Expect(k8sClient.Get(ctx, typeNamespacedName, gordon)).To(Succeed())
			Expect(gordon.Status.Pods).To(HaveLen(3))
			var pods corev1.PodList
			Expect(k8sClient.List(ctx, &pods, client.InNamespace(resourceNamespace), client.MatchingLabels{gordonLabel: resourceName})).To(Succeed())
			Expect(pods.Items).To(HaveLen(3))
			for _, p := range pods.Items {
				Expect(metav1.IsControlledBy(&p, gordon)).To(BeTrue())
			}
		})
	})
})
